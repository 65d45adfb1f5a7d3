"""The registry lists each external system once; configuration and the live source are built from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rca.config import load_config
from rca.env import ConfigError
from rca.integrations import registry
from rca.integrations.email.config import EmailConfig
from rca.integrations.slack.channel import SlackChannel
from rca.integrations.slack.config import SlackConfig
from rca.telemetry.live import LiveConfig, LiveSource
from rca.telemetry.model import Modality

EVERY_BACKEND = {
    "PROMETHEUS_URL": "http://prometheus:9090",
    "LOKI_URL": "http://loki:3100",
    "TEMPO_URL": "http://tempo:3200",
    "JAEGER_URL": "http://jaeger:16686",
    "KUBERNETES_URL": "https://k8s:6443",
    "GITHUB_REPOSITORY": "acme/shop",
}


def test_names_and_variables_are_declared_once() -> None:
    names = [s.name for s in registry.SYSTEMS]
    assert len(names) == len(set(names))
    variables = [v for s in registry.SYSTEMS for v in s.config.env_names()]
    assert len(variables) == len(set(variables))
    # Every system has a role: the live source reads it, or the notify action sends through it.
    assert all((s.connector is None) != (s.channel is None) for s in registry.SYSTEMS)


def test_the_environment_configures_the_live_source_through_the_registry(tmp_path: Path) -> None:
    cfg = load_config({"SECRET_KEY": "k" * 40, "ROOTLINE_VAR_DIR": str(tmp_path), **EVERY_BACKEND})
    assert list(cfg.live_telemetry) == [s.name for s in registry.TELEMETRY]
    live = LiveConfig.from_mapping(cfg.live_telemetry)
    assert live.backends["kubernetes"].options == {"namespaces": ["default"]}
    with LiveSource(live) as source:
        assert source.modalities() == frozenset(Modality)


def test_a_bad_value_names_its_variable() -> None:
    with pytest.raises(ConfigError, match=r"^GITHUB_REPOSITORY='acme' is not owner/name$"):
        registry.configured({"GITHUB_REPOSITORY": "acme"})
    with pytest.raises(ConfigError, match=r"^TEMPO_URL must be a URL"):
        registry.configured({"TEMPO_URL": "tempo:3200"})


def test_a_channel_configuration_gives_its_channel() -> None:
    channel = registry.channel(SlackConfig("https://hooks.slack.com/services/T/B/x"))
    assert isinstance(channel, SlackChannel)
    assert registry.channel(EmailConfig(("a@example.org",))).name == "email"
    with pytest.raises(TypeError, match="configures no notification channel"):
        registry.channel(object())
