"""Prometheus: metric series over the HTTP API (`query_range`, label values)."""
