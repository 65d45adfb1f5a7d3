"""Loaders that turn the public datasets under `shared/data/` into recorded telemetry sources."""
