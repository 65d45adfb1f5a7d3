"""Typed reads of environment variables; each failure is a `ConfigError` naming the variable.

Shared by `rca.config` (Rootline's own settings) and each integration's configuration
(`rca.integrations.<system>.config`), which declares and reads its own variables.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse


class ConfigError(Exception):
    """A setting is missing or malformed; the message names the variable."""


def kept_secret(path: Path, nbytes: int = 48) -> str:
    """A random secret made once at `path` (mode 600) and read back on every later call.

    Standard library only: `dev.py` calls it before the virtualenv exists."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(nbytes))
        path.chmod(0o600)
    return path.read_text().strip()


def text(env: Mapping[str, str], name: str) -> str | None:
    """The variable's value without surrounding blanks; None when unset or blank."""
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """A boolean: true/false, 1/0, yes/no or on/off (any case)."""
    raw = text(env, name)
    if raw is None:
        return default
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")


def choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    """One of `choices` (any case), lower-cased."""
    raw = (text(env, name) or default).lower()
    if raw not in choices:
        raise ConfigError(f"{name}={raw!r} is not one of {', '.join(choices)}")
    return raw


def port(env: Mapping[str, str], name: str, default: int) -> int:
    """A TCP port, 1-65535."""
    raw = text(env, name)
    if raw is None:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigError(f"{name}={raw!r} is not a TCP port (1-65535)")
    return int(raw)


def whole_number(env: Mapping[str, str], name: str, default: int, least: int = 1) -> int:
    """A whole number of at least `least`."""
    raw = text(env, name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < least:
        raise ConfigError(f"{name}={raw!r} is not a whole number of at least {least}")
    return int(raw)


def positive_number(env: Mapping[str, str], name: str, default: float) -> float:
    """A finite number above zero."""
    raw = text(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name}={raw!r} is not a positive number")
    return value


def url(env: Mapping[str, str], name: str, default: str | None, schemes: tuple[str, ...]) -> str | None:
    """A URL with one of `schemes` and a host name (sqlite URLs need none)."""
    raw = text(env, name)
    if raw is None:
        return default
    return _checked_url(name, raw, schemes)


def url_or(env: Mapping[str, str], name: str, default: str, schemes: tuple[str, ...]) -> str:
    """Like `url`, with a default that is never None."""
    raw = text(env, name)
    return default if raw is None else _checked_url(name, raw, schemes)


def _checked_url(name: str, raw: str, schemes: tuple[str, ...]) -> str:
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        raise ConfigError(f"{name} must be a URL starting with {' or '.join(s + '://' for s in schemes)}")
    if parsed.scheme not in ("sqlite",) and not parsed.hostname:
        raise ConfigError(f"{name} has no host name")
    return raw
