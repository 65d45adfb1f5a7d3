"""The action executors' settings: dry run by default, GitHub shared with live telemetry, and a bad
value stopping the start with one line naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from rca.config import ConfigError, load_config
from rca.integrations.email.config import EmailConfig
from rca.integrations.github.config import GitHubConfig
from rca.integrations.slack.config import SlackConfig

GOOD = {"SECRET_KEY": "k" * 40}


def test_dry_run_by_default_and_nothing_configured(tmp_path: Path) -> None:
    actions = load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path)}).actions
    assert actions.dry_run is True
    assert (actions.channels, actions.github) == ((), None)
    assert actions.base_url == "http://127.0.0.1:8000"
    assert actions.label == "rootline"


def test_every_setting_from_the_environment(tmp_path: Path) -> None:
    actions = load_config(
        {
            **GOOD,
            "ROOTLINE_VAR_DIR": str(tmp_path),
            "ROOTLINE_ACTIONS_DRY_RUN": "false",
            "ROOTLINE_BASE_URL": "https://rootline.example.org/",
            "ROOTLINE_SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T1/B2/x",
            "ROOTLINE_NOTIFY_EMAIL": "oncall@example.org, sre@example.org",
            "GITHUB_REPOSITORY": "acme/shop",
            "GITHUB_TOKEN": "ghp_x",
            "ROOTLINE_ACTIONS_LABEL": "incident",
            "ROOTLINE_ACTIONS_MANIFEST_PATH": "deploy/{service}/deployment.yaml",
        }
    ).actions
    assert actions.dry_run is False
    assert actions.base_url == "https://rootline.example.org"
    # Slack before e-mail: the order of the integrations registry.
    assert actions.channels == (
        SlackConfig("https://hooks.slack.com/services/T1/B2/x"),
        EmailConfig(("oncall@example.org", "sre@example.org")),
    )
    assert actions.github == GitHubConfig(repo="acme/shop", token="ghp_x")
    assert actions.label == "incident"
    assert actions.manifest_path == "deploy/{service}/deployment.yaml"


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"ROOTLINE_ACTIONS_DRY_RUN": "perhaps"}, "ROOTLINE_ACTIONS_DRY_RUN"),
        ({"ROOTLINE_BASE_URL": "rootline.example.org"}, "ROOTLINE_BASE_URL"),
        ({"ROOTLINE_SLACK_WEBHOOK_URL": "hooks.slack.com/x"}, "ROOTLINE_SLACK_WEBHOOK_URL"),
        ({"ROOTLINE_NOTIFY_EMAIL": "oncall"}, "ROOTLINE_NOTIFY_EMAIL"),
        ({"ROOTLINE_ACTIONS_MANIFEST_PATH": "deploy/app.yaml"}, "ROOTLINE_ACTIONS_MANIFEST_PATH"),
        ({"ROOTLINE_ACTIONS_MANIFEST_PATH": "/abs/{service}.yaml"}, "ROOTLINE_ACTIONS_MANIFEST_PATH"),
    ],
)
def test_bad_values_name_the_variable(tmp_path: Path, env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path), **env})


def test_the_mail_server_comes_from_djangos_own_variable_names(tmp_path: Path) -> None:
    smtp = load_config(
        {
            **GOOD,
            "ROOTLINE_VAR_DIR": str(tmp_path),
            "EMAIL_HOST": "smtp.example.org",
            "EMAIL_PORT": "587",
            "EMAIL_HOST_USER": "rootline",
            "EMAIL_HOST_PASSWORD": "hunter2-but-longer",
            "EMAIL_USE_TLS": "true",
            "DEFAULT_FROM_EMAIL": "rootline@example.org",
        }
    ).smtp
    assert (smtp.host, smtp.port, smtp.user, smtp.use_tls, smtp.sender) == (
        "smtp.example.org",
        587,
        "rootline",
        True,
        "rootline@example.org",
    )
    assert "hunter2" not in repr(smtp)
    assert load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path)}).smtp.host == "localhost"


@pytest.mark.parametrize(
    ("name", "value"), [("EMAIL_PORT", "smtp"), ("EMAIL_USE_TLS", "maybe"), ("DEFAULT_FROM_EMAIL", "nobody")]
)
def test_a_bad_mail_setting_names_its_variable(tmp_path: Path, name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path), name: value})
