"""Settings come from the environment and fail at start with one line naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rca.config import ConfigError, load_config

REPO = Path(__file__).resolve().parents[3]
GOOD = {"SECRET_KEY": "k" * 40}


def test_defaults_are_embedded_and_local(tmp_path: Path) -> None:
    cfg = load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path)})
    assert cfg.database_url == f"sqlite:///{tmp_path / 'rootline.sqlite3'}"
    assert cfg.graph.embedded
    assert cfg.graph.uri.startswith("bolt://127.0.0.1:")
    assert cfg.qdrant_url is None
    assert cfg.qdrant_path == tmp_path / "qdrant"
    assert cfg.allowed_hosts == ("127.0.0.1", "localhost")
    assert not cfg.debug
    # the embedded graph password is generated once and kept
    assert cfg.graph.password == load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path)}).graph.password


def test_external_services(tmp_path: Path) -> None:
    cfg = load_config(
        {
            **GOOD,
            "ROOTLINE_VAR_DIR": str(tmp_path),
            "DATABASE_URL": "postgres://u:p@db:5432/rootline",
            "REDIS_URL": "redis://cache:6379/1",
            "NEO4J_URI": "neo4j://graph:7687",
            "NEO4J_USER": "neo4j",
            "NEO4J_PASSWORD": "secret",
            "NEO4J_DATABASE": "rca",
            "QDRANT_URL": "http://qdrant:6333",
            "ANTHROPIC_API_KEY": "sk-test",
            "DEBUG": "yes",
            "ALLOWED_HOSTS": "rootline.example.org, 10.0.0.5",
        }
    )
    assert not cfg.graph.embedded
    assert (cfg.graph.uri, cfg.graph.user, cfg.graph.database) == ("neo4j://graph:7687", "neo4j", "rca")
    assert cfg.qdrant_url == "http://qdrant:6333"
    assert cfg.debug
    assert cfg.allowed_hosts == ("rootline.example.org", "10.0.0.5")


def test_live_telemetry_backends_from_the_environment(tmp_path: Path) -> None:
    cfg = load_config(
        {
            **GOOD,
            "ROOTLINE_VAR_DIR": str(tmp_path),
            "PROMETHEUS_URL": "http://prometheus:9090",
            "LOKI_URL": "http://loki:3100",
            "KUBERNETES_URL": "https://k8s:6443",
            "KUBERNETES_TOKEN": "t0ken",
            "KUBERNETES_NAMESPACES": "shop, payments",
            "GITHUB_REPOSITORY": "acme/shop",
        }
    )
    assert set(cfg.live_telemetry) == {"prometheus", "loki", "kubernetes", "github"}
    assert cfg.live_telemetry["kubernetes"]["namespaces"] == ["shop", "payments"]
    assert cfg.live_telemetry["github"]["repo"] == "acme/shop"


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"DEBUG": "maybe"}, "DEBUG"),
        ({"DATABASE_URL": "mysql://x/y"}, "DATABASE_URL"),
        ({"DATABASE_URL": "postgres:///nohost"}, "DATABASE_URL"),
        ({"REDIS_URL": "http://cache"}, "REDIS_URL"),
        ({"NEO4J_URI": "http://graph:7474"}, "NEO4J_URI"),
        ({"NEO4J_URI": "bolt://graph:7687"}, "NEO4J_USER"),
        ({"NEO4J_URI": "bolt://graph:7687", "NEO4J_USER": "neo4j"}, "NEO4J_PASSWORD"),
        ({"QDRANT_URL": "qdrant:6333"}, "QDRANT_URL"),
        ({"ROOTLINE_GRAPH_PORT": "99999"}, "ROOTLINE_GRAPH_PORT"),
        ({"ALLOWED_HOSTS": " , "}, "ALLOWED_HOSTS"),
        ({"SECRET_KEY": "short"}, "SECRET_KEY"),
        ({"ROOTLINE_TASK_VISIBILITY_S": "0"}, "ROOTLINE_TASK_VISIBILITY_S"),
        ({"PROMETHEUS_URL": "prometheus:9090"}, "PROMETHEUS_URL"),
        ({"GITHUB_REPOSITORY": "just-a-name"}, "GITHUB_REPOSITORY"),
        ({"SECRET_KEY": ""}, "SECRET_KEY"),
        ({"ROOTLINE_INTAKE_RATE": "600"}, "ROOTLINE_INTAKE_RATE"),
        ({"ROOTLINE_INTAKE_RATE": "0/min"}, "ROOTLINE_INTAKE_RATE"),
        ({"ROOTLINE_INTAKE_RATE": "10/ms"}, "ROOTLINE_INTAKE_RATE"),
        ({"ROOTLINE_INTAKE_FAILURE_RATE": "many/min"}, "ROOTLINE_INTAKE_FAILURE_RATE"),
        ({"ROOTLINE_NUM_PROXIES": "-1"}, "ROOTLINE_NUM_PROXIES"),
    ],
)
def test_bad_values_name_the_variable(tmp_path: Path, env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path), **env})


def test_intake_rates_are_normalised_for_the_throttles(tmp_path: Path) -> None:
    base = {**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path)}
    assert (load_config(base).intake_rate, load_config(base).intake_failure_rate) == ("1200/min", "60/min")
    cfg = load_config(
        {**base, "ROOTLINE_INTAKE_RATE": " 50 / seconds", "ROOTLINE_INTAKE_FAILURE_RATE": "5/h"}
    )
    assert (cfg.intake_rate, cfg.intake_failure_rate) == ("50/s", "5/hour")


def test_secret_key_generated_only_in_debug(tmp_path: Path) -> None:
    cfg = load_config({"DEBUG": "true", "ROOTLINE_VAR_DIR": str(tmp_path)})
    assert len(cfg.secret_key) >= 32
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600


def test_manage_py_fails_with_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NEO4J_URI",)}
    env.update({"NEO4J_URI": "http://nope", "ROOTLINE_VAR_DIR": str(tmp_path)})
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "NEO4J_URI" in lines[0]
    assert "Traceback" not in proc.stderr


def test_manage_py_without_secret_key_uses_the_key_kept_in_var(tmp_path: Path) -> None:
    """The README's `python manage.py ...` lines run without SECRET_KEY, as `dev.py run` does: both
    use var/secret_key (made on first use), so a command run by hand shares the app's key."""
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env.update({"ROOTLINE_VAR_DIR": str(tmp_path), "DEBUG": "false"})
    with pytest.raises(ConfigError, match=r"SECRET_KEY is not set .*/secret_key\)"):
        load_config({k: v for k, v in env.items() if k != "DATABASE_URL"})

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True
        )

    first = check()
    assert first.returncode == 0, first.stderr
    kept = (tmp_path / "secret_key").read_text()
    assert len(kept) >= 32
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert check().returncode == 0
    assert (tmp_path / "secret_key").read_text() == kept  # made once, then reused


def test_the_readme_documents_every_integrations_variables() -> None:
    from rca.integrations.registry import SYSTEMS

    readme = (REPO / "README.md").read_text()
    missing = [name for s in SYSTEMS for name in s.config.env_names() if f"`{name}`" not in readme]
    assert missing == []


def test_reliability_and_security_settings(tmp_path: Path) -> None:
    cfg = load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path)})
    assert cfg.reliability.health_timeout_s == 2.0
    assert cfg.reliability.health_processes is None  # derived from the installation
    assert cfg.reliability.intake_token_cache_s == 5
    assert not cfg.security.session_cookie_secure
    assert cfg.security.hsts_seconds == 0
    tls = load_config(
        {
            **GOOD,
            "ROOTLINE_VAR_DIR": str(tmp_path),
            "SESSION_COOKIE_SECURE": "true",
            "CSRF_COOKIE_SECURE": "1",
            "SECURE_HSTS_SECONDS": "31536000",
            "ROOTLINE_HEALTH_PROCESSES": "worker, scheduler",
            "ROOTLINE_HEALTH_CACHE_S": "0",
            "ROOTLINE_API_TOKEN_FAILURE_RATE": "5/minute",
            "ROOTLINE_INTAKE_TOKEN_CACHE_S": "0",
        }
    )
    assert tls.security.session_cookie_secure
    assert tls.security.csrf_cookie_secure
    assert tls.security.hsts_seconds == 31536000
    assert tls.reliability.health_processes == ("worker", "scheduler")
    assert tls.reliability.health_cache_s == 0.0
    assert tls.security.api_token_failure_rate == "5/min"
    assert tls.reliability.intake_token_cache_s == 0


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ROOTLINE_HEALTH_PROCESSES", "worker,cron", "ROOTLINE_HEALTH_PROCESSES names cron"),
        ("ROOTLINE_HEALTH_TIMEOUT_S", "0", "ROOTLINE_HEALTH_TIMEOUT_S='0' is not a positive number"),
        ("SECURE_HSTS_SECONDS", "a year", "SECURE_HSTS_SECONDS='a year' is not a whole number"),
        ("SESSION_COOKIE_SECURE", "maybe", "SESSION_COOKIE_SECURE='maybe' is not a boolean"),
        ("ROOTLINE_INTAKE_TOKEN_CACHE_S", "1.5", "ROOTLINE_INTAKE_TOKEN_CACHE_S='1.5' is not a whole number"),
    ],
)
def test_bad_reliability_and_security_settings_name_the_variable(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config({**GOOD, "ROOTLINE_VAR_DIR": str(tmp_path), name: value})
