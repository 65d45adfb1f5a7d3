"""Prometheus's configuration: `PROMETHEUS_URL` (unset: off), `PROMETHEUS_TOKEN` (a bearer token) and
`ROOTLINE_SERVICE_LABELS` (comma-separated labels that name a service, in order; unset: the OpenTelemetry
and Kubernetes ones, `connector.DEFAULT_ENTITY_LABELS`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar, Self

from rca import env
from rca.integrations.config import BackendConfig

SERVICE_LABELS_ENV = "ROOTLINE_SERVICE_LABELS"


@dataclass(frozen=True)
class PrometheusConfig(BackendConfig):
    """Where Prometheus's HTTP API is, how to authenticate, and (as `entity_labels`) what names a service."""

    name: ClassVar[str] = "prometheus"

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """PROMETHEUS_URL, PROMETHEUS_TOKEN and ROOTLINE_SERVICE_LABELS."""
        return (*super().env_names(), SERVICE_LABELS_ENV)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self | None:
        """The URL and token as for every backend, and the service labels when set."""
        config = super().from_env(environ)
        if config is None:
            return None
        labels = [label.strip() for label in (env.text(environ, SERVICE_LABELS_ENV) or "").split(",")]
        labels = [label for label in labels if label]
        return replace(config, options={"entity_labels": labels}) if labels else config
