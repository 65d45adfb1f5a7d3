"""Parsing helpers shared by every integration's client.

Everything here is pure: shape checks that raise `ShapeError` (the HTTP client turns it into a
`BackendError` naming the system), query-language literals and time conversions. What maps a
telemetry backend's answers onto the incident telemetry model is in `rca.integrations.otel`.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any


class ShapeError(ValueError):
    """A response parsed as JSON but did not have the shape the API documents."""


# --- shape checks -------------------------------------------------------------------------------


def as_dict(value: Any, what: str) -> dict[str, Any]:
    """`value` if it is a JSON object, else a ShapeError naming `what`."""
    if not isinstance(value, dict):
        raise ShapeError(f"{what}: expected an object, got {type(value).__name__}")
    return value


def as_list(value: Any, what: str) -> list[Any]:
    """`value` if it is a JSON array (null counts as empty, as several APIs send it), else ShapeError."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(f"{what}: expected an array, got {type(value).__name__}")
    return value


def as_str(value: Any, what: str) -> str:
    """`value` if it is a non-empty string, else a ShapeError naming `what`."""
    if not isinstance(value, str) or not value:
        raise ShapeError(f"{what}: expected a non-empty string, got {value!r:.60}")
    return value


def opt_str(value: Any) -> str | None:
    """A non-empty string or None (for optional fields whose absence is normal)."""
    return value if isinstance(value, str) and value else None


def as_number(value: Any, what: str) -> float:
    """A JSON number or a numeric string (int64s travel as strings in proto3 JSON) as float."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ShapeError(f"{what}: expected a number, got {value!r:.60}")
    try:
        return float(value)
    except ValueError as exc:
        raise ShapeError(f"{what}: expected a number, got {value!r:.60}") from exc


def as_int(value: Any, what: str) -> int:
    """A JSON integer or an integer string (exact: nanosecond timestamps do not fit a float)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ShapeError(f"{what}: expected an integer, got {value!r:.60}")
    try:
        return int(value)
    except ValueError as exc:
        raise ShapeError(f"{what}: expected an integer, got {value!r:.60}") from exc


# --- query languages ----------------------------------------------------------------------------


def quote(value: str) -> str:
    """A PromQL / LogQL / TraceQL double-quoted string literal (Go escaping, which JSON's matches)."""
    return json.dumps(value, ensure_ascii=False)


def regex_literal(value: str) -> str:
    """`value` escaped for use inside an RE2 regex (Prometheus `=~`, Loki `|~`)."""
    return re.escape(value)


# --- time ---------------------------------------------------------------------------------------


def ns_to_seconds(value: Any, what: str) -> float:
    """Unix nanoseconds (int or decimal string) to unix seconds."""
    return as_int(value, what) / 1e9


def seconds_to_ns(t: float) -> int:
    """Unix seconds to integer unix nanoseconds (Loki's time parameters)."""
    return round(t * 1e9)


def parse_rfc3339(value: Any, what: str) -> float:
    """An RFC 3339 timestamp (Kubernetes, GitHub) to unix seconds; naive times are taken as UTC."""
    text = as_str(value, what)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ShapeError(f"{what}: not an RFC 3339 time: {text!r:.60}") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def to_rfc3339(t: float) -> str:
    """Unix seconds to an RFC 3339 UTC timestamp with a `Z` suffix (GitHub's `since` / `until`)."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
