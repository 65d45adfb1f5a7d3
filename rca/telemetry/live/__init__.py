"""Live telemetry connectors: Prometheus, Loki, Tempo, Jaeger, Kubernetes events and GitHub.

Each connector turns one backend's HTTP API into the incident telemetry model; `LiveSource`
composes whichever are configured behind the `TelemetrySource` protocol.
"""

from rca.telemetry.live.source import LiveConfig, LiveSource

__all__ = ["LiveConfig", "LiveSource"]
