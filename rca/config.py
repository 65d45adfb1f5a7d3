"""Settings from the environment (12-factor), validated once at start.

Every value Rootline reads from the environment is parsed here, so that a missing or malformed value
fails at start with one line naming the variable instead of a stack trace deep inside a request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rca import env as read
from rca.env import ConfigError
from rca.integrations import registry
from rca.integrations.email.config import SmtpConfig
from rca.integrations.github.config import GitHubConfig

__all__ = [
    "ActionsConfig",
    "Config",
    "ConfigError",
    "GraphConfig",
    "PolicyConfig",
    "SmtpConfig",
    "load_config",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
SECRET_KEY_FILE = "secret_key"  # noqa: S105  (a file name under the var dir, the one `dev.py run` uses)


@dataclass(frozen=True)
class GraphConfig:
    """How to reach the Bolt graph server (Neo4j in production, embedded ArcadeDB otherwise)."""

    uri: str
    user: str
    password: str
    database: str
    embedded: bool


@dataclass(frozen=True)
class PolicyConfig:
    """Which policy picks the investigation's steps, and the Anthropic policy's model and budget."""

    kind: str = "offline"  # one of POLICIES
    api_key: str | None = field(default=None, repr=False)  # never in a log line
    model: str = "claude-sonnet-4-6"
    # Per investigation; at either limit the Anthropic policy fails closed.
    max_tokens: int = 200_000
    max_cost_usd: float = 1.0
    # Per installation and calendar month (UTC), counted from the investigations stored this month; each
    # investigation's budget is the smaller of its own and what the month has left. The defaults are a
    # hundred full per-investigation budgets.
    monthly_tokens: int = 20_000_000
    monthly_cost_usd: float = 100.0
    # USD per million tokens, for the cost budget: set them to the chosen model's list price (the
    # defaults are Sonnet-class prices, not checked against a live price list).
    price_input_per_mtok: float = 3.0
    price_output_per_mtok: float = 15.0
    retries: int = 3  # after a 429, 529, 5xx or connection error, before the offline policy takes over
    timeout_s: float = 30.0


POLICIES = ("offline", "anthropic")


@dataclass(frozen=True)
class ActionsConfig:
    """Where approved actions go (rca.actions); anything unset is recorded in the app only."""

    # On by default: writing to a repository or a chat is the one outward effect Rootline has, so an
    # installation opts in (ROOTLINE_ACTIONS_DRY_RUN=false) after seeing what would be sent.
    dry_run: bool = True
    base_url: str = "http://127.0.0.1:8000"  # links back to the incident page
    github: GitHubConfig | None = None  # GITHUB_REPOSITORY, shared with live change telemetry
    # The configured notification channels (SlackConfig, EmailConfig of rca.integrations), in registry order.
    channels: tuple[Any, ...] = ()
    label: str = "rootline"
    # A deploy's manifest in the repository, `{service}` standing for the service, e.g.
    # `kubernetes-manifests/{service}.yaml`; unset: a deploy citation gets no patch, with that reason.
    manifest_path: str | None = None


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
    metrics_token: str | None
    log_format: str
    policy: PolicyConfig
    data_dir: Path | None
    celery_eager: bool
    task_visibility_s: int
    live_telemetry: dict[str, Any]  # backends by name, and `topology_file`
    actions: ActionsConfig
    smtp: SmtpConfig
    intake_rate: str = "1200/min"  # requests per intake token (rca.api.throttling)
    intake_failure_rate: str = "60/min"  # failed intake authentications per client address
    num_proxies: int = 0  # reverse proxies in front that append to X-Forwarded-For
    reliability: ReliabilityConfig = field(default_factory=lambda: ReliabilityConfig())
    security: SecurityConfig = field(default_factory=lambda: SecurityConfig())


_RATE_UNITS = {
    "s": ("s", "sec", "second"),
    "min": ("m", "min", "minute"),
    "hour": ("h", "hour"),
    "day": ("d", "day"),
}
# Each word, and the plural of each word longer than a letter ("10/ms" is not ten a minute).
_RATE_PERIODS = {
    word + plural: unit
    for unit, words in _RATE_UNITS.items()
    for word in words
    for plural in ("", "s")[: 1 + (len(word) > 1)]
}


def _topology_file(env: Mapping[str, str]) -> dict[str, object]:
    """`ROOTLINE_TOPOLOGY_FILE`: a static call graph, the live path's last source of topology."""
    path = read.text(env, "ROOTLINE_TOPOLOGY_FILE")
    if path is None:
        return {}
    if not Path(path).is_file():
        raise ConfigError(f"ROOTLINE_TOPOLOGY_FILE={path!r} is not a file")
    return {"topology_file": str(Path(path).resolve())}


def _rate(env: Mapping[str, str], name: str, default: str) -> str:
    """A request rate `N/period` (per s, min, hour or day), normalised to the form DRF's throttles parse."""
    raw = read.text(env, name)
    if raw is None:
        return default
    count, _, period = raw.replace(" ", "").partition("/")
    unit = _RATE_PERIODS.get(period.lower())
    if not count.isdigit() or int(count) < 1 or unit is None:
        raise ConfigError(
            f"{name}={raw!r} is not a rate like 600/min (a whole number per s, min, hour or day)"
        )
    return f"{int(count)}/{unit}"


def policy_config(env: Mapping[str, str]) -> PolicyConfig:
    """The investigation policy's settings; the Anthropic policy needs ANTHROPIC_API_KEY."""
    kind = read.choice(env, "ROOTLINE_POLICY", POLICIES, "offline")
    api_key = read.text(env, "ANTHROPIC_API_KEY")
    if kind == "anthropic" and api_key is None:
        raise ConfigError("ANTHROPIC_API_KEY is not set (required when ROOTLINE_POLICY=anthropic)")
    d = PolicyConfig()
    return PolicyConfig(
        kind=kind,
        api_key=api_key,
        model=read.text(env, "ANTHROPIC_MODEL") or d.model,
        max_tokens=read.whole_number(env, "ROOTLINE_POLICY_MAX_TOKENS", d.max_tokens),
        max_cost_usd=read.positive_number(env, "ROOTLINE_POLICY_MAX_COST_USD", d.max_cost_usd),
        monthly_tokens=read.whole_number(env, "ROOTLINE_POLICY_MONTHLY_TOKENS", d.monthly_tokens),
        monthly_cost_usd=read.positive_number(env, "ROOTLINE_POLICY_MONTHLY_COST_USD", d.monthly_cost_usd),
        price_input_per_mtok=read.positive_number(
            env, "ANTHROPIC_PRICE_INPUT_PER_MTOK", d.price_input_per_mtok
        ),
        price_output_per_mtok=read.positive_number(
            env, "ANTHROPIC_PRICE_OUTPUT_PER_MTOK", d.price_output_per_mtok
        ),
        retries=read.whole_number(env, "ANTHROPIC_MAX_RETRIES", d.retries, least=0),
        timeout_s=read.positive_number(env, "ANTHROPIC_TIMEOUT_S", d.timeout_s),
    )


def _secret_key(env: Mapping[str, str], debug: bool, var_dir: Path) -> str:
    raw = read.text(env, "SECRET_KEY")
    if raw is not None:
        if len(raw) < 32:
            raise ConfigError("SECRET_KEY is too short (use at least 32 random characters)")
        return raw
    if not debug:
        raise ConfigError(
            "SECRET_KEY is not set (required unless DEBUG=true; `python manage.py` and `dev.py run` "
            f"use the one kept in {var_dir / SECRET_KEY_FILE})"
        )
    # In DEBUG a key is made once and kept under var/ so sessions survive restarts.
    return read.kept_secret(var_dir / SECRET_KEY_FILE)


def var_dir_of(env: Mapping[str, str]) -> Path:
    """Where Rootline keeps its local state: ROOTLINE_VAR_DIR, else var/ in the checkout."""
    return Path(read.text(env, "ROOTLINE_VAR_DIR") or REPO_ROOT / "var").resolve()


def local_secret_key(env: Mapping[str, str]) -> str:
    """The key a local installation shares between `dev.py run` and `python manage.py`: kept in
    var/secret_key, made on first use (a deployment sets SECRET_KEY instead, and this is not read)."""
    return read.kept_secret(var_dir_of(env) / SECRET_KEY_FILE)


def embedded_graph_password(var_dir: Path) -> str:
    """The embedded graph server's root password, made once and kept under var/."""
    return read.kept_secret(var_dir / "arcadedb" / "root_password", 24)


def _graph(env: Mapping[str, str], var_dir: Path) -> GraphConfig:
    uri = read.url(env, "NEO4J_URI", None, ("bolt", "neo4j", "bolt+s", "neo4j+s", "bolt+ssc", "neo4j+ssc"))
    database = read.text(env, "NEO4J_DATABASE")
    if uri is None:
        port = read.port(env, "ROOTLINE_GRAPH_PORT", 7688)
        return GraphConfig(
            uri=f"bolt://127.0.0.1:{port}",
            user="root",
            password=embedded_graph_password(var_dir),
            database=database or "rootline",
            embedded=True,
        )
    user = read.text(env, "NEO4J_USER")
    password = read.text(env, "NEO4J_PASSWORD")
    if user is None:
        raise ConfigError("NEO4J_USER is not set (required when NEO4J_URI is set)")
    if password is None:
        raise ConfigError("NEO4J_PASSWORD is not set (required when NEO4J_URI is set)")
    return GraphConfig(uri=uri, user=user, password=password, database=database or "neo4j", embedded=False)


def actions_config(env: Mapping[str, str], integrations: Mapping[str, Any]) -> ActionsConfig:
    """Settings of the action executors; GitHub and the notification channels come from `integrations`
    (the configured systems of `rca.integrations.registry`)."""
    manifest = read.text(env, "ROOTLINE_ACTIONS_MANIFEST_PATH")
    if manifest is not None and ("{service}" not in manifest or manifest.startswith("/")):
        raise ConfigError(
            f"ROOTLINE_ACTIONS_MANIFEST_PATH={manifest!r} must be a relative path containing {{service}}"
        )
    return ActionsConfig(
        dry_run=read.flag(env, "ROOTLINE_ACTIONS_DRY_RUN", True),
        base_url=read.url_or(env, "ROOTLINE_BASE_URL", ActionsConfig.base_url, ("http", "https")).rstrip("/"),
        github=integrations.get(GitHubConfig.name),
        channels=tuple(integrations[s.name] for s in registry.CHANNELS if s.name in integrations),
        label=read.text(env, "ROOTLINE_ACTIONS_LABEL") or ActionsConfig.label,
        manifest_path=manifest,
    )


# --- reliability and security (issue #23): health deadlines, stuck-investigation recovery, intake
# under load, login throttling, TLS cookies. Kept in one block of its own.


@dataclass(frozen=True)
class ReliabilityConfig:
    """Deadlines that keep health checks, investigations and intake from waiting forever."""

    health_timeout_s: float = 2.0  # each dependency check's deadline
    health_cache_s: float = 1.0  # a burst of probes within this costs one round of checks
    # Which supervised processes /healthz expects a heartbeat from; None: derived (see rca.heartbeats).
    health_processes: tuple[str, ...] | None = None
    heartbeat_stale_s: float = 30.0  # a worker / scheduler / running investigation silent this long is gone
    redispatch_after_s: float = 600.0  # a queued investigation handed to the broker this long ago is re-sent
    sweep_every_s: float = 30.0  # how often beat runs the outbox and recovery sweep
    sqlite_busy_timeout_s: float = 5.0  # how long a SQLite writer waits for the lock
    intake_lock_retries: int = 3  # intake transactions retried on a database lock before 503
    intake_retry_after_s: int = 2  # the Retry-After of that 503
    # How long a web process trusts a verified intake token without asking the database again: a
    # token deactivated elsewhere (another process, SQL) is refused at most this long after; 0: no cache.
    intake_token_cache_s: int = 5


@dataclass(frozen=True)
class SecurityConfig:
    """Failed-login throttling and the settings of a TLS deployment."""

    login_failure_limit: int = 10  # failed logins per account, and per address, before a lockout
    login_lockout_s: int = 900
    api_token_failure_rate: str = "30/min"  # noqa: S105  (a rate: failed API-token authentications per address)
    session_cookie_secure: bool = False
    csrf_cookie_secure: bool = False
    hsts_seconds: int = 0
    hsts_include_subdomains: bool = False
    hsts_preload: bool = False
    ssl_redirect: bool = False
    trust_forwarded_proto: bool = False  # the proxy in front sets X-Forwarded-Proto: https


HEALTH_PROCESSES = ("worker", "memory-worker", "scheduler")


def reliability_config(env: Mapping[str, str]) -> ReliabilityConfig:
    """ROOTLINE_HEALTH_*, ROOTLINE_HEARTBEAT_STALE_S, ROOTLINE_REDISPATCH_AFTER_S, ROOTLINE_SWEEP_EVERY_S,
    ROOTLINE_SQLITE_BUSY_TIMEOUT_S, ROOTLINE_INTAKE_LOCK_RETRIES, ROOTLINE_INTAKE_RETRY_AFTER_S,
    ROOTLINE_INTAKE_TOKEN_CACHE_S."""
    d = ReliabilityConfig()
    raw = read.text(env, "ROOTLINE_HEALTH_PROCESSES")
    processes: tuple[str, ...] | None = None
    if raw is not None:
        processes = () if raw.lower() == "none" else tuple(p.strip() for p in raw.split(",") if p.strip())
        unknown = [p for p in processes if p not in HEALTH_PROCESSES]
        if unknown:
            raise ConfigError(
                f"ROOTLINE_HEALTH_PROCESSES names {', '.join(unknown)}: use none or any of "
                f"{', '.join(HEALTH_PROCESSES)}"
            )
    cache = read.text(env, "ROOTLINE_HEALTH_CACHE_S")
    return ReliabilityConfig(
        health_timeout_s=read.positive_number(env, "ROOTLINE_HEALTH_TIMEOUT_S", d.health_timeout_s),
        # 0 turns the cache off (tests that watch a dependency go down and come back).
        health_cache_s=0.0
        if cache == "0"
        else read.positive_number(env, "ROOTLINE_HEALTH_CACHE_S", d.health_cache_s),
        health_processes=processes,
        heartbeat_stale_s=read.positive_number(env, "ROOTLINE_HEARTBEAT_STALE_S", d.heartbeat_stale_s),
        redispatch_after_s=read.positive_number(env, "ROOTLINE_REDISPATCH_AFTER_S", d.redispatch_after_s),
        sweep_every_s=read.positive_number(env, "ROOTLINE_SWEEP_EVERY_S", d.sweep_every_s),
        sqlite_busy_timeout_s=read.positive_number(
            env, "ROOTLINE_SQLITE_BUSY_TIMEOUT_S", d.sqlite_busy_timeout_s
        ),
        intake_lock_retries=read.whole_number(env, "ROOTLINE_INTAKE_LOCK_RETRIES", d.intake_lock_retries, 0),
        intake_retry_after_s=read.whole_number(env, "ROOTLINE_INTAKE_RETRY_AFTER_S", d.intake_retry_after_s),
        intake_token_cache_s=read.whole_number(
            env, "ROOTLINE_INTAKE_TOKEN_CACHE_S", d.intake_token_cache_s, least=0
        ),
    )


def security_config(env: Mapping[str, str]) -> SecurityConfig:
    """ROOTLINE_LOGIN_*, ROOTLINE_API_TOKEN_FAILURE_RATE, and the TLS settings under Django's names:
    SESSION_COOKIE_SECURE, CSRF_COOKIE_SECURE, SECURE_HSTS_SECONDS, SECURE_HSTS_INCLUDE_SUBDOMAINS,
    SECURE_HSTS_PRELOAD, SECURE_SSL_REDIRECT, ROOTLINE_TRUST_X_FORWARDED_PROTO."""
    d = SecurityConfig()
    return SecurityConfig(
        login_failure_limit=read.whole_number(env, "ROOTLINE_LOGIN_FAILURE_LIMIT", d.login_failure_limit),
        login_lockout_s=read.whole_number(env, "ROOTLINE_LOGIN_LOCKOUT_S", d.login_lockout_s),
        api_token_failure_rate=_rate(env, "ROOTLINE_API_TOKEN_FAILURE_RATE", d.api_token_failure_rate),
        session_cookie_secure=read.flag(env, "SESSION_COOKIE_SECURE", d.session_cookie_secure),
        csrf_cookie_secure=read.flag(env, "CSRF_COOKIE_SECURE", d.csrf_cookie_secure),
        hsts_seconds=read.whole_number(env, "SECURE_HSTS_SECONDS", d.hsts_seconds, least=0),
        hsts_include_subdomains=read.flag(env, "SECURE_HSTS_INCLUDE_SUBDOMAINS", d.hsts_include_subdomains),
        hsts_preload=read.flag(env, "SECURE_HSTS_PRELOAD", d.hsts_preload),
        ssl_redirect=read.flag(env, "SECURE_SSL_REDIRECT", d.ssl_redirect),
        trust_forwarded_proto=read.flag(env, "ROOTLINE_TRUST_X_FORWARDED_PROTO", d.trust_forwarded_proto),
    )


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Parse and validate the environment; raises ConfigError naming the first bad variable."""
    env = os.environ if env is None else env
    var_dir = var_dir_of(env)
    debug = read.flag(env, "DEBUG", False)
    hosts_raw = read.text(env, "ALLOWED_HOSTS") or "127.0.0.1,localhost"
    allowed_hosts = tuple(h.strip() for h in hosts_raw.split(",") if h.strip())
    if not allowed_hosts:
        raise ConfigError("ALLOWED_HOSTS is empty")
    database_url = read.url_or(
        env,
        "DATABASE_URL",
        f"sqlite:///{var_dir / 'rootline.sqlite3'}",
        ("sqlite", "postgres", "postgresql", "pgsql"),
    )
    redis_url = read.url_or(env, "REDIS_URL", "redis://127.0.0.1:6379/0", ("redis", "rediss", "unix"))
    qdrant_url = read.url(env, "QDRANT_URL", None, ("http", "https"))
    qdrant_path = Path(read.text(env, "QDRANT_PATH") or var_dir / "qdrant").resolve()
    data_raw = read.text(env, "ROOTLINE_DATA_DIR")
    if data_raw is not None:
        given = Path(data_raw).resolve()
        if not (given / "cases_index.csv").is_file():
            raise ConfigError(f"ROOTLINE_DATA_DIR={data_raw!r} has no cases_index.csv")
        data_dir: Path | None = given
    else:
        default_data = (REPO_ROOT.parent / "shared" / "data").resolve()
        data_dir = default_data if (default_data / "cases_index.csv").is_file() else None
    integrations = registry.configured(env)
    return Config(
        secret_key=_secret_key(env, debug, var_dir),
        debug=debug,
        allowed_hosts=allowed_hosts,
        var_dir=var_dir,
        database_url=database_url,
        redis_url=redis_url,
        graph=_graph(env, var_dir),
        embedded_graph_http_port=read.port(env, "ROOTLINE_GRAPH_HTTP_PORT", 2488),
        qdrant_url=qdrant_url,
        qdrant_path=qdrant_path,
        memory_via_worker=read.flag(env, "ROOTLINE_MEMORY_VIA_WORKER", False),
        memory_timeout_s=read.whole_number(env, "ROOTLINE_MEMORY_TIMEOUT_S", 5),
        metrics_token=read.text(env, "ROOTLINE_METRICS_TOKEN"),
        log_format=read.choice(env, "ROOTLINE_LOG_FORMAT", ("json", "text"), "json"),
        policy=policy_config(env),
        data_dir=data_dir,
        celery_eager=read.flag(env, "ROOTLINE_CELERY_EAGER", False),
        task_visibility_s=read.whole_number(env, "ROOTLINE_TASK_VISIBILITY_S", 900),
        live_telemetry={
            **{s.name: integrations[s.name].settings() for s in registry.TELEMETRY if s.name in integrations},
            **_topology_file(env),
        },
        actions=actions_config(env, integrations),
        smtp=SmtpConfig.from_env(env),
        intake_rate=_rate(env, "ROOTLINE_INTAKE_RATE", Config.intake_rate),
        intake_failure_rate=_rate(env, "ROOTLINE_INTAKE_FAILURE_RATE", Config.intake_failure_rate),
        num_proxies=read.whole_number(env, "ROOTLINE_NUM_PROXIES", Config.num_proxies, least=0),
        reliability=reliability_config(env),
        security=security_config(env),
    )
