"""Jaeger: traces from the query service's HTTP API."""
