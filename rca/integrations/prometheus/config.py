"""Prometheus's configuration: `PROMETHEUS_URL` (unset: off) and `PROMETHEUS_TOKEN` (a bearer token)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rca.integrations.config import BackendConfig


@dataclass(frozen=True)
class PrometheusConfig(BackendConfig):
    """Where Prometheus's HTTP API is and how to authenticate."""

    name: ClassVar[str] = "prometheus"
