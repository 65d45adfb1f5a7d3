"""Kubernetes: events of the configured namespaces from the API server."""
