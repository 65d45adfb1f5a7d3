"""Grafana Tempo: traces (search, then fetch each trace as OTLP JSON)."""
