"""Jaeger's configuration: `JAEGER_URL` (unset: off) and `JAEGER_TOKEN` (a bearer token)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rca.integrations.config import BackendConfig


@dataclass(frozen=True)
class JaegerConfig(BackendConfig):
    """Where Jaeger's HTTP API is and how to authenticate."""

    name: ClassVar[str] = "jaeger"
