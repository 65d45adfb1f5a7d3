"""Loki: log records over the HTTP API (LogQL `query_range`)."""
