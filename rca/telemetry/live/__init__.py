"""The live telemetry source: `LiveSource` composes the connectors of `rca.integrations` (Prometheus,
Loki, Tempo, Jaeger, Kubernetes events, GitHub changes) behind the `TelemetrySource` protocol."""

from rca.telemetry.live.source import LiveConfig, LiveSource

__all__ = ["LiveConfig", "LiveSource"]
