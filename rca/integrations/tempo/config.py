"""Tempo's configuration: `TEMPO_URL` (unset: off) and `TEMPO_TOKEN` (a bearer token)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rca.integrations.config import BackendConfig


@dataclass(frozen=True)
class TempoConfig(BackendConfig):
    """Where Tempo's HTTP API is and how to authenticate."""

    name: ClassVar[str] = "tempo"
