"""Loki's configuration: `LOKI_URL` (unset: off) and `LOKI_TOKEN` (a bearer token)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rca.integrations.config import BackendConfig


@dataclass(frozen=True)
class LokiConfig(BackendConfig):
    """Where Loki's HTTP API is and how to authenticate."""

    name: ClassVar[str] = "loki"
