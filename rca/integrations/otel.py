"""Mapping telemetry backends' answers onto the incident telemetry model (OpenTelemetry's vocabulary).

Pure helpers shared by the telemetry connectors: trace and span ids, log severity, span kind and
status, the rules that turn labels and Kubernetes object names into `service.name` entities, and
clipping spans to a window.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rca.integrations.parsing import ShapeError, as_str
from rca.telemetry.model import Severity, Span, SpanKind, SpanStatus, TimeWindow

# --- ids ----------------------------------------------------------------------------------------

_HEX = re.compile(r"^[0-9a-fA-F]+$")


def normalize_id(value: Any, nbytes: int, what: str) -> str:
    """A trace id (16 bytes) or span id (8 bytes) as lowercase hex, from hex or base64.

    OTLP/JSON says hex, but Tempo's protobuf-JSON answers base64; Tempo search and Jaeger drop
    leading zeros from hex ids. Hex of at most full length wins (shorter hex is zero-padded on the
    left); anything else is decoded as base64 (standard or URL-safe, padding optional). Padded
    base64 of 8 or 16 bytes always ends in '=', so it is never mistaken for hex.
    """
    text = as_str(value, what)
    width = 2 * nbytes
    if _HEX.match(text) and len(text) <= width:
        return text.lower().rjust(width, "0")
    try:
        urlsafe = "-" in text or "_" in text
        raw = base64.b64decode(
            text + "=" * (-len(text) % 4), altchars=b"-_" if urlsafe else None, validate=True
        )
    except (binascii.Error, ValueError) as exc:
        raise ShapeError(f"{what}: neither hex nor base64: {text!r:.60}") from exc
    if len(raw) != nbytes:
        raise ShapeError(f"{what}: expected {nbytes} bytes, got {len(raw)}")
    return raw.hex()


def opt_id(value: Any, nbytes: int, what: str) -> str | None:
    """Like `normalize_id`, but None for absent / empty ids and for the all-zero id (no parent)."""
    if value is None or value == "":
        return None
    ident = normalize_id(value, nbytes, what)
    return None if set(ident) == {"0"} else ident


# --- severity -----------------------------------------------------------------------------------

_SEVERITY_WORDS: dict[str, Severity] = {
    "trace": Severity.TRACE,
    "debug": Severity.DEBUG,
    "dbug": Severity.DEBUG,
    "info": Severity.INFO,
    "information": Severity.INFO,
    "informational": Severity.INFO,
    "notice": Severity.INFO,
    "warn": Severity.WARN,
    "warning": Severity.WARN,
    "error": Severity.ERROR,
    "err": Severity.ERROR,
    "eror": Severity.ERROR,
    "critical": Severity.FATAL,
    "crit": Severity.FATAL,
    "fatal": Severity.FATAL,
    "panic": Severity.FATAL,
    "emerg": Severity.FATAL,
    "alert": Severity.FATAL,
}

# Explicit level fields first (logfmt `level=error`, JSON `"level":"error"`), then a bare
# upper-case word such as `ERROR` / `[WARN]`; lower-case prose ("no errors") must not count.
_LEVEL_FIELD = re.compile(
    r"""(?:^|[\s{,])"?(?:level|lvl|severity|loglevel|log\.level|severity_text)"?\s*[=:]\s*"?([A-Za-z]+)""",
    re.IGNORECASE,
)
_LEVEL_WORD = re.compile(r"\b(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL|PANIC)\b")


def severity_from_text(text: str | None) -> Severity | None:
    """A severity from a level word ("error", "WARN", "Information"), or None if it is not one."""
    if not text:
        return None
    return _SEVERITY_WORDS.get(text.strip().lower())


def severity_of(labels: Mapping[str, str], line: str, keys: Iterable[str]) -> Severity:
    """Severity from the first label in `keys` that names a level, else from the line, else INFO."""
    for key in keys:
        found = severity_from_text(labels.get(key))
        if found is not None:
            return found
    match = _LEVEL_FIELD.search(line)
    if match and (found := severity_from_text(match.group(1))) is not None:
        return found
    match = _LEVEL_WORD.search(line)
    if match and (found := severity_from_text(match.group(1))) is not None:
        return found
    return Severity.INFO


# --- spans --------------------------------------------------------------------------------------

_KINDS_BY_NUMBER = {
    0: SpanKind.UNSPECIFIED,
    1: SpanKind.INTERNAL,
    2: SpanKind.SERVER,
    3: SpanKind.CLIENT,
    4: SpanKind.PRODUCER,
    5: SpanKind.CONSUMER,
}
_STATUS_BY_NUMBER = {0: SpanStatus.UNSET, 1: SpanStatus.OK, 2: SpanStatus.ERROR}


def span_kind(value: Any) -> SpanKind:
    """OTLP kind as int (2), enum name ("SPAN_KIND_SERVER") or Jaeger tag ("server")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _KINDS_BY_NUMBER.get(value, SpanKind.UNSPECIFIED)
    if isinstance(value, str):
        name = value.lower().removeprefix("span_kind_")
        try:
            return SpanKind(name)
        except ValueError:
            return SpanKind.UNSPECIFIED
    return SpanKind.UNSPECIFIED


def span_status(value: Any) -> SpanStatus:
    """OTLP status code as int (2), enum name ("STATUS_CODE_ERROR") or OTel tag value ("ERROR")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _STATUS_BY_NUMBER.get(value, SpanStatus.UNSET)
    if isinstance(value, str):
        name = value.lower().removeprefix("status_code_")
        try:
            return SpanStatus(name)
        except ValueError:
            return SpanStatus.UNSET
    return SpanStatus.UNSET


# --- entities -----------------------------------------------------------------------------------

# Kubernetes' SafeEncodeString alphabet: pod-template-hash and generated-name suffixes use it
# (no vowels, no 0/1/3), which is what makes stripping them safe for ordinary service names.
SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
_DEPLOYMENT_POD = re.compile(rf"^(?P<name>.+)-(?:{SAFE}{{6,10}}|\d{{6,10}})-{SAFE}{{5}}$")
_REPLICASET = re.compile(rf"^(?P<name>.+)-(?:{SAFE}{{6,10}}|\d{{6,10}})$")
_STATEFULSET_POD = re.compile(r"^(?P<name>.+)-\d+$")
_GENERATED_POD = re.compile(rf"^(?P<name>.+)-{SAFE}{{5}}$")  # daemonset / job / bare replicaset pods


def service_from_pod(pod: str) -> str:
    """The workload (service) name of a pod: strip `-<rs hash>-<5>`, `-<ordinal>` or `-<5>`."""
    for pattern in (_DEPLOYMENT_POD, _STATEFULSET_POD, _GENERATED_POD):
        match = pattern.match(pod)
        if match:
            return match.group("name")
    return pod


def service_from_object(kind: str, name: str) -> str:
    """The service name of a Kubernetes object: pods and replica sets lose their generated suffixes."""
    if kind == "Pod":
        return service_from_pod(name)
    if kind == "ReplicaSet":
        match = _REPLICASET.match(name)
        return match.group("name") if match else name
    return name


def entity_from_labels(
    labels: Mapping[str, str], entity_keys: Iterable[str]
) -> tuple[str | None, str | None]:
    """(entity, instance) from Prometheus / Loki labels.

    The entity is the first of `entity_keys` present; a `job` of the form `namespace/name` (the
    Grafana/OTel mapping of service.namespace/service.name) gives `name`. Without any, a pod
    label still names the workload. The instance is the pod, else `instance`.
    """
    instance = labels.get("pod") or labels.get("k8s_pod_name") or labels.get("instance") or None
    for key in entity_keys:
        value = labels.get(key)
        if value:
            return (value.rsplit("/", 1)[-1] if key == "job" else value), instance
    pod = labels.get("pod") or labels.get("k8s_pod_name")
    return (service_from_pod(pod) if pod else None), instance


def clip_spans(spans: Iterable[Span], window: TimeWindow, limit: int) -> list[Span]:
    """Spans starting inside `window`, deduplicated by (trace, span), ordered by start, at most `limit`."""
    seen: dict[tuple[str, str], Span] = {}
    for span in spans:
        if window.contains(span.start):
            seen.setdefault((span.trace_id, span.span_id), span)
    return sorted(seen.values(), key=lambda s: (s.start, s.trace_id, s.span_id))[:limit]
