"""External systems, one folder each: its configuration (`config.py`), its client or connector, and the
protocol its user relies on (`protocols.py`).

- `http.py`: the one HTTP client (timeouts, retries with backoff, auth, secrets masked, clear errors).
- `parsing.py`, `otel.py`: pure helpers for reading API answers and mapping them onto the telemetry model.
- `registry.py`: the list of systems, declared once; configuration and the live source read it.

Integrations depend on nothing of Rootline's but the safety core and the telemetry model they produce.
"""
