"""External systems, one folder each: its configuration (`config.py`), its client or connector, and the
protocol its user relies on (`protocols.py`).

- `http.py`: the one HTTP client (timeouts, retries with backoff, auth, secrets masked, clear errors).
- `parsing.py`, `otel.py`: pure helpers for reading API answers and mapping them onto the telemetry model.
- `registry.py`: the list of systems, declared once; configuration and the live source read it.

Of Rootline's own code, integrations may import only the safety core, the environment readers (`rca.env`)
and the telemetry model their connectors produce (an import-linter contract in pyproject.toml).
"""
