"""Settings from the environment (12-factor), validated once at start.

Every value Rootline reads from the environment is parsed here, so that a missing or malformed value
fails at start with one line naming the variable instead of a stack trace deep inside a request.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

REPO_ROOT = Path(__file__).resolve().parent.parent


class ConfigError(Exception):
    """A setting is missing or malformed; the message names the variable."""


@dataclass(frozen=True)
class GraphConfig:
    """How to reach the Bolt graph server (Neo4j in production, embedded ArcadeDB otherwise)."""

    uri: str
    user: str
    password: str
    database: str
    embedded: bool


@dataclass(frozen=True)
class Config:
    """Everything Rootline reads from the environment."""

    secret_key: str
    debug: bool
    allowed_hosts: tuple[str, ...]
    var_dir: Path
    database_url: str
    redis_url: str
    graph: GraphConfig
    embedded_graph_http_port: int
    qdrant_url: str | None
    qdrant_path: Path
    memory_via_worker: bool
    memory_timeout_s: int
    anthropic_api_key: str | None
    data_dir: Path | None
    celery_eager: bool
    task_visibility_s: int
    live_telemetry: dict[str, dict[str, object]]


def _str(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _str(env, name)
    if raw is None:
        return default
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    raw = _str(env, name)
    if raw is None:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigError(f"{name}={raw!r} is not a TCP port (1-65535)")
    return int(raw)


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = _str(env, name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name}={raw!r} is not a positive whole number")
    return int(raw)


def _url(env: Mapping[str, str], name: str, default: str | None, schemes: tuple[str, ...]) -> str | None:
    raw = _str(env, name)
    if raw is None:
        return default
    return _checked_url(name, raw, schemes)


def _url_or(env: Mapping[str, str], name: str, default: str, schemes: tuple[str, ...]) -> str:
    raw = _str(env, name)
    return default if raw is None else _checked_url(name, raw, schemes)


def _checked_url(name: str, raw: str, schemes: tuple[str, ...]) -> str:
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        raise ConfigError(f"{name} must be a URL starting with {' or '.join(s + '://' for s in schemes)}")
    if parsed.scheme not in ("sqlite",) and not parsed.hostname:
        raise ConfigError(f"{name} has no host name")
    return raw


def _secret_key(env: Mapping[str, str], debug: bool, var_dir: Path) -> str:
    raw = _str(env, "SECRET_KEY")
    if raw is not None:
        if len(raw) < 32:
            raise ConfigError("SECRET_KEY is too short (use at least 32 random characters)")
        return raw
    if not debug:
        raise ConfigError("SECRET_KEY is not set (required unless DEBUG=true)")
    # In DEBUG a key is made once and kept under var/ so sessions survive restarts.
    path = var_dir / "secret_key"
    if not path.exists():
        var_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path.read_text().strip()


def embedded_graph_password(var_dir: Path) -> str:
    """The embedded graph server's root password, made once and kept under var/."""
    path = var_dir / "arcadedb" / "root_password"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(24))
        path.chmod(0o600)
    return path.read_text().strip()


def _graph(env: Mapping[str, str], var_dir: Path) -> GraphConfig:
    uri = _url(env, "NEO4J_URI", None, ("bolt", "neo4j", "bolt+s", "neo4j+s", "bolt+ssc", "neo4j+ssc"))
    database = _str(env, "NEO4J_DATABASE")
    if uri is None:
        port = _port(env, "ROOTLINE_GRAPH_PORT", 7688)
        return GraphConfig(
            uri=f"bolt://127.0.0.1:{port}",
            user="root",
            password=embedded_graph_password(var_dir),
            database=database or "rootline",
            embedded=True,
        )
    user = _str(env, "NEO4J_USER")
    password = _str(env, "NEO4J_PASSWORD")
    if user is None:
        raise ConfigError("NEO4J_USER is not set (required when NEO4J_URI is set)")
    if password is None:
        raise ConfigError("NEO4J_PASSWORD is not set (required when NEO4J_URI is set)")
    return GraphConfig(uri=uri, user=user, password=password, database=database or "neo4j", embedded=False)


def _live_telemetry(env: Mapping[str, str]) -> dict[str, dict[str, object]]:
    """Live backends for incidents that are not recorded cases; a backend without a URL is off."""
    backends: dict[str, dict[str, object]] = {}
    for name in ("prometheus", "loki", "tempo", "jaeger", "kubernetes"):
        url = _url(env, f"{name.upper()}_URL", None, ("http", "https"))
        if url is not None:
            backends[name] = {"url": url, "token": _str(env, f"{name.upper()}_TOKEN")}
    if "kubernetes" in backends:
        spaces = _str(env, "KUBERNETES_NAMESPACES") or "default"
        backends["kubernetes"]["namespaces"] = [n.strip() for n in spaces.split(",") if n.strip()]
    repo = _str(env, "GITHUB_REPOSITORY")
    if repo is not None:
        if repo.count("/") != 1 or repo.startswith("/") or repo.endswith("/"):
            raise ConfigError(f"GITHUB_REPOSITORY={repo!r} is not owner/name")
        backends["github"] = {"repo": repo, "token": _str(env, "GITHUB_TOKEN")}
    return backends


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Parse and validate the environment; raises ConfigError naming the first bad variable."""
    env = os.environ if env is None else env
    var_dir = Path(_str(env, "ROOTLINE_VAR_DIR") or REPO_ROOT / "var").resolve()
    debug = _bool(env, "DEBUG", False)
    hosts_raw = _str(env, "ALLOWED_HOSTS") or "127.0.0.1,localhost"
    allowed_hosts = tuple(h.strip() for h in hosts_raw.split(",") if h.strip())
    if not allowed_hosts:
        raise ConfigError("ALLOWED_HOSTS is empty")
    database_url = _url_or(
        env,
        "DATABASE_URL",
        f"sqlite:///{var_dir / 'rootline.sqlite3'}",
        ("sqlite", "postgres", "postgresql", "pgsql"),
    )
    redis_url = _url_or(env, "REDIS_URL", "redis://127.0.0.1:6379/0", ("redis", "rediss", "unix"))
    qdrant_url = _url(env, "QDRANT_URL", None, ("http", "https"))
    qdrant_path = Path(_str(env, "QDRANT_PATH") or var_dir / "qdrant").resolve()
    data_raw = _str(env, "ROOTLINE_DATA_DIR")
    if data_raw is not None:
        given = Path(data_raw).resolve()
        if not (given / "cases_index.csv").is_file():
            raise ConfigError(f"ROOTLINE_DATA_DIR={data_raw!r} has no cases_index.csv")
        data_dir: Path | None = given
    else:
        default_data = (REPO_ROOT.parent / "shared" / "data").resolve()
        data_dir = default_data if (default_data / "cases_index.csv").is_file() else None
    return Config(
        secret_key=_secret_key(env, debug, var_dir),
        debug=debug,
        allowed_hosts=allowed_hosts,
        var_dir=var_dir,
        database_url=database_url,
        redis_url=redis_url,
        graph=_graph(env, var_dir),
        embedded_graph_http_port=_port(env, "ROOTLINE_GRAPH_HTTP_PORT", 2488),
        qdrant_url=qdrant_url,
        qdrant_path=qdrant_path,
        memory_via_worker=_bool(env, "ROOTLINE_MEMORY_VIA_WORKER", False),
        memory_timeout_s=_positive_int(env, "ROOTLINE_MEMORY_TIMEOUT_S", 5),
        anthropic_api_key=_str(env, "ANTHROPIC_API_KEY"),
        data_dir=data_dir,
        celery_eager=_bool(env, "ROOTLINE_CELERY_EAGER", False),
        task_visibility_s=_positive_int(env, "ROOTLINE_TASK_VISIBILITY_S", 900),
        live_telemetry=_live_telemetry(env),
    )
