"""Every external system Rootline talks to, declared once, in one list.

Each entry names the system's configuration class (its name and environment variables) and its role:
the telemetry modality the live source reads through its connector, or the notification channel the
notify action sends through. `rca.config` reads every system's configuration from the environment
through this list, `rca.telemetry.live` builds the connectors from it, and a test checks that the
README documents each system's variables. Adding a system is one folder and one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from rca.integrations.email.channel import EmailChannel
from rca.integrations.email.config import EmailConfig
from rca.integrations.github.changes import GitHubConnector
from rca.integrations.github.config import GitHubConfig
from rca.integrations.jaeger.config import JaegerConfig
from rca.integrations.jaeger.connector import JaegerConnector
from rca.integrations.kubernetes.config import KubernetesConfig
from rca.integrations.kubernetes.connector import KubernetesConnector
from rca.integrations.loki.config import LokiConfig
from rca.integrations.loki.connector import LokiConnector
from rca.integrations.prometheus.config import PrometheusConfig
from rca.integrations.prometheus.connector import PrometheusConnector
from rca.integrations.protocols import NotificationChannel
from rca.integrations.slack.channel import SlackChannel
from rca.integrations.slack.config import SlackConfig
from rca.integrations.tempo.config import TempoConfig
from rca.integrations.tempo.connector import TempoConnector
from rca.telemetry.model import Modality


class SystemConfig(Protocol):
    """What the registry needs of a system's configuration class."""

    name: str

    def env_names(self) -> tuple[str, ...]:
        """The environment variables the system reads."""
        ...

    def from_env(self, environ: Mapping[str, str]) -> Any:
        """The system's configuration, or None when it is not configured."""
        ...


@dataclass(frozen=True)
class System:
    """One external system: its configuration class and what Rootline does with it."""

    config: SystemConfig
    modality: Modality | None = None  # what the live telemetry source reads from it
    connector: Callable[..., Any] | None = None  # connector(client, **config.connector_arguments())
    channel: Callable[[Any], NotificationChannel] | None = None  # channel(config), for notifications

    @property
    def name(self) -> str:
        """The system's name (settings key, error messages)."""
        return self.config.name


SYSTEMS: tuple[System, ...] = (
    System(PrometheusConfig, Modality.METRICS, PrometheusConnector),
    System(LokiConfig, Modality.LOGS, LokiConnector),
    # Tempo before Jaeger: with both configured, spans come from Tempo.
    System(TempoConfig, Modality.TRACES, TempoConnector),
    System(JaegerConfig, Modality.TRACES, JaegerConnector),
    System(KubernetesConfig, Modality.EVENTS, KubernetesConnector),
    System(GitHubConfig, Modality.CHANGES, GitHubConnector),
    System(SlackConfig, channel=SlackChannel),
    System(EmailConfig, channel=EmailChannel),
)
TELEMETRY: tuple[System, ...] = tuple(s for s in SYSTEMS if s.connector is not None)
CHANNELS: tuple[System, ...] = tuple(s for s in SYSTEMS if s.channel is not None)


def configured(environ: Mapping[str, str]) -> dict[str, Any]:
    """Each configured system's configuration, by name, in registry order (raises env.ConfigError)."""
    found = ((system.name, system.config.from_env(environ)) for system in SYSTEMS)
    return {name: config for name, config in found if config is not None}


def channel(config: Any) -> NotificationChannel:
    """The notification channel a channel configuration (SlackConfig, EmailConfig) sends through."""
    for system in CHANNELS:
        if system.channel is not None and isinstance(config, cast(type, system.config)):
            return system.channel(config)
    raise TypeError(f"{type(config).__name__} configures no notification channel")
