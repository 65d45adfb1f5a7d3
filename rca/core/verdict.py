"""Negation-aware, structured-signal-first verdict classifier.

``classify`` decides what one tool result says about a fault hypothesis:

1. A failed tool call (``ok`` false, an ``error``, a 4xx/5xx ``backend_status``) is inconclusive:
   a Loki timeout must never count for, or against, a "timeout" hypothesis.
2. Structured signals decide when any recognised one is present (numbers beat words).
3. Otherwise the free text decides (``classify_text``): tool-failure and empty-result shapes are
   inconclusive; numeric key/value pairs, Prometheus samples and kubectl tables found in the text
   are read as signals; failing that, fault and health cues are weighed with their negations.

A healthy result can refute or be inconclusive, never support. The default is inconclusive.

No evidence proves a fault by naming it: the entity names a tool reports (``ToolOutput.entities``)
are masked before the text is read, so `topology: timeout-proxy has 1 callers` or `changes: no
change to error-tracker` classify on their signals, not on the words inside a name; and a lane that
describes structure (``ToolOutput.structural``, the topology lane) is inconclusive whatever it says,
since a graph can say what may propagate, never that something is broken.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from rca.core.evidence import SignalValue, Verdict, no_signals

SIGNAL_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "error_rate": "fraction of failed requests (0..1, or a percentage with '%')",
        "error_rate_baseline": "error_rate before onset",
        "success_rate": "fraction of successful requests or probes; probe_success and up are aliases",
        "success_rate_baseline": "success_rate before onset",
        "error_count": "errors, failures, exceptions, timeouts or 5xx responses in the window",
        "error_count_baseline": "error_count in an equally long window before onset",
        "latency_ms": "a latency (mean or percentile); units ms, s, us, ns accepted",
        "latency_baseline_ms": "the same latency before onset; latency is only judged against it",
        "restarts": "container restarts in the window",
        "oom_kills": "OOM kills in the window",
        "unavailable_replicas": "desired minus ready replicas",
        "anomaly_score": "anomaly score in 0..1",
        "changepoint_at": "unix seconds of a detected changepoint; judged against the onset window",
        "change_in_window": "true when a commit, PR, deploy or config change hit the suspect in the window",
    }
)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Decision thresholds; every one is configurable, the defaults are the conservative choice."""

    error_rate: float = 0.05  # an error rate at or above 5 % supports
    error_count: float = 10  # this many errors support when there is no baseline to compare with
    elevation_factor: float = 2.0  # "elevated" means at least this multiple of the baseline
    normal_factor: float = 1.2  # at most this multiple of the baseline is normal and refutes
    latency_min_delta_ms: float = 50.0  # a latency rise smaller than this never supports
    restarts: float = 1
    oom_kills: float = 1
    unavailable_replicas: float = 1
    anomaly_supports: float = 0.8
    anomaly_refutes: float = 0.2
    healthy_text_refutes: bool = True  # False: healthy free text is inconclusive instead


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What one tool call returned, as the capture decorator hands it to the classifier.

    ``signals`` uses the keys of :data:`SIGNAL_KEYS`; ``onset_start``/``onset_end`` (unix
    seconds) bound the window a ``changepoint_at`` must fall into.
    """

    text: str = ""
    signals: Mapping[str, SignalValue] = field(default_factory=no_signals, hash=False)
    ok: bool = True
    error: str | None = None
    backend_status: int | None = None
    onset_start: float | None = None
    onset_end: float | None = None
    entities: tuple[str, ...] = ()  # names the text may carry: identifiers, never cues
    structural: bool = False  # a structure-only lane (topology): never decisive on its own

    def __post_init__(self) -> None:
        object.__setattr__(self, "signals", MappingProxyType(dict(self.signals)))
        object.__setattr__(self, "entities", tuple(self.entities))

    @property
    def failed(self) -> bool:
        """True when the tool call itself failed, whatever its text says."""
        return (
            not self.ok
            or bool(self.error)
            or (self.backend_status is not None and self.backend_status >= 400)
        )


# --- signal recognition ------------------------------------------------------------------------

_RATE_KINDS = frozenset({"error_rate", "success_rate"})
_COUNT_KINDS = frozenset({"error_count", "restarts", "oom_kills", "unavailable_replicas"})

# Matched in order against the normalised key; the first hit names the kind.
_KIND_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rf"(?:^|_)(?:{pattern})(?:_|$)"))
    for kind, pattern in (
        ("change_in_window", r"change_in_window"),
        ("changepoint_at", r"changepoint_at"),
        ("error_rate", r"(?:errors?|err|failures?|fail|5xx)_(?:rate|ratio|percent|percentage|pct)"),
        ("success_rate", r"success_(?:rate|ratio|percent|pct)|availability|probe_success|^up$"),
        ("oom_kills", r"oom_?kill(?:s|ed|ing)?|oom_events?"),
        ("restarts", r"restarts?|restart_count"),
        ("unavailable_replicas", r"unavailable(?:_replicas)?|replicas_unavailable"),
        ("anomaly_score", r"anomaly(?:_score)?"),
        ("latency_ms", r"latency|p50|p90|p95|p99|duration|response_time"),
        (
            "error_count",
            r"errors?|error_count|error_lines|exceptions?|failures?|failed|timeouts?|panics?"
            r"|5xx",
        ),
    )
)
_KEY_UNITS = {"ms": "ms", "milliseconds": "ms", "s": "s", "sec": "s", "seconds": "s", "us": "us"}
_NOT_A_VALUE = frozenset({"bucket", "sum", "le", "limit", "max", "threshold", "config"})
_LATENCY_SCALE = {
    "": 1.0,
    "ms": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "seconds": 1000.0,
    "us": 1e-3,
    "µs": 1e-3,
    "ns": 1e-6,
}
_QUANTITY = re.compile(
    r"\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(%|ms|µs|us|ns|s|sec|seconds)?\s*", re.IGNORECASE
)
_TRUTH = {"true": 1.0, "yes": 1.0, "false": 0.0, "no": 0.0}


@dataclass(frozen=True, slots=True)
class _Key:
    kind: str
    baseline: bool
    unit: str


def _parse_key(raw: str) -> _Key | None:
    tokens = [t for t in re.split(r"[^a-z0-9]+", raw.lower()) if t]
    baseline = any(t in ("baseline", "before", "normal", "expected") for t in tokens)
    unit = next((_KEY_UNITS[t] for t in tokens if t in _KEY_UNITS), "")
    if any(t in _NOT_A_VALUE for t in tokens):
        return None  # histogram parts, limits and configured thresholds are not observations
    key = "_".join(t for t in tokens if t not in ("baseline", "before", "normal", "expected", "total"))
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(key):
            if kind in _COUNT_KINDS and unit:
                return None  # "timeout_ms=5000" is a setting, not 5000 timeouts
            return _Key(kind, baseline, unit)
    return None


def _scaled(kind: str, raw: SignalValue, key_unit: str) -> float | None:
    """Turn a raw value into the kind's canonical unit, or None when it cannot be one."""
    if isinstance(raw, bool | int | float):
        number, unit = float(raw), ""
    else:
        text = raw.strip().lower()
        if text in _TRUTH:
            number, unit = _TRUTH[text], ""
        else:
            match = _QUANTITY.fullmatch(text)
            if match is None:
                return None
            number, unit = float(match.group(1)), (match.group(2) or "").lower()
    if not math.isfinite(number) or number < 0:
        return None
    if kind == "latency_ms":
        return number * _LATENCY_SCALE[unit or key_unit]
    if kind in _RATE_KINDS:
        if unit not in ("", "%"):
            return None
        if unit == "%" or number > 1:  # a rate above 1 can only be a percentage
            number /= 100
        return number if number <= 1 else None
    return None if unit else number


@dataclass(slots=True)
class _Signals:
    values: dict[str, list[float]] = field(default_factory=dict)
    baselines: dict[str, float] = field(default_factory=dict)

    def add(self, key: str, raw: SignalValue) -> None:
        parsed = _parse_key(key)
        if parsed is None:
            return
        value = _scaled(parsed.kind, raw, parsed.unit)
        if value is None:
            return
        if parsed.baseline:
            self.baselines.setdefault(parsed.kind, value)
        else:
            self.values.setdefault(parsed.kind, []).append(value)


def _against_baseline(value: float, baseline: float | None, floor: float, t: Thresholds) -> Verdict:
    """Judge a bad-when-high measure: at/above ``floor`` and elevated supports, normal refutes."""
    if baseline is None:
        if value >= floor:
            return Verdict.SUPPORTS
        return Verdict.REFUTES if value == 0 else Verdict.INCONCLUSIVE
    if value >= floor and value >= baseline * t.elevation_factor:
        return Verdict.SUPPORTS
    if value <= baseline * t.normal_factor:
        return Verdict.REFUTES
    return Verdict.INCONCLUSIVE


def _at_least(value: float, threshold: float) -> Verdict:
    if value >= threshold:
        return Verdict.SUPPORTS
    return Verdict.REFUTES if value == 0 else Verdict.INCONCLUSIVE


def _judge_one(
    kind: str, value: float, signals: _Signals, window: tuple[float, float] | None, t: Thresholds
) -> Verdict | None:
    baseline = signals.baselines.get(kind)
    if kind == "error_rate":
        return _against_baseline(value, baseline, t.error_rate, t)
    if kind == "success_rate":
        failing = None if baseline is None else 1 - baseline
        return _against_baseline(1 - value, failing, t.error_rate, t)
    if kind == "error_count":
        return _against_baseline(value, baseline, t.error_count, t)
    if kind == "latency_ms":
        if baseline is None:
            return None  # a latency alone says nothing about normal
        return _against_baseline(value, baseline, baseline + t.latency_min_delta_ms, t)
    if kind == "anomaly_score":
        if value >= t.anomaly_supports:
            return Verdict.SUPPORTS
        return Verdict.REFUTES if value <= t.anomaly_refutes else Verdict.INCONCLUSIVE
    if kind == "changepoint_at":
        if window is None:
            return None
        return Verdict.SUPPORTS if window[0] <= value <= window[1] else Verdict.INCONCLUSIVE
    if kind == "change_in_window":
        # A change in the window implicates the suspect; its absence clears nothing.
        return Verdict.SUPPORTS if value else Verdict.INCONCLUSIVE
    threshold = {"restarts": t.restarts, "oom_kills": t.oom_kills}.get(kind, t.unavailable_replicas)
    return _at_least(value, threshold)


def _judge(signals: _Signals, window: tuple[float, float] | None, t: Thresholds) -> Verdict | None:
    """Combine per-value verdicts: any support wins, all refuting refutes; None when none applies."""
    verdicts = [
        verdict
        for kind, values in signals.values.items()
        for value in values
        if (verdict := _judge_one(kind, value, signals, window, t)) is not None
    ]
    if not verdicts:
        return None
    if Verdict.SUPPORTS in verdicts:
        return Verdict.SUPPORTS
    if all(v is Verdict.REFUTES for v in verdicts):
        return Verdict.REFUTES
    return Verdict.INCONCLUSIVE


# --- text: failure and empty shapes ------------------------------------------------------------

_TOOL_FAILURE = re.compile(
    "|".join(
        (
            r"\bquery (?:timed out|timeout)\b",
            r"\"status\"\s*:\s*\"error\"\s*,\s*\"errorType\"",  # Prometheus / Loki HTTP API error
            r"^\s*error from server\b",  # kubectl
            r"\bunable to connect to the server\b",
            r"\bthe server doesn't have a resource type\b",
            r"\"message\"\s*:\s*\"[^\"]*\"\s*,\s*\"documentation_url\"",  # GitHub API error
            r"\bparse error at line \d+",  # PromQL / LogQL
            r"\btoo many outstanding requests\b",  # Loki 429
            r"\bmax(?:imum)? (?:entries|series) limit\b",
            r"\"errors\"\s*:\s*\[\s*\{\s*\"code\"\s*:\s*\d+",  # Jaeger query API error
            r"\A\s*(?:HTTP/\d(?:\.\d)?\s+)?[45]\d\d(?:\s+[a-z][a-z ]*)?\s*\Z",  # a bare status line
        )
    ),
    re.IGNORECASE | re.MULTILINE,
)
_EMPTY_WHOLE = re.compile(
    r"\A\s*(?:\[\s*\]|\{\s*\}|null|none|<none>|no data|<no value>|empty(?: query)? result)?\s*\Z",
    re.IGNORECASE,
)
_EMPTY_FIRST_LINE = re.compile(
    r"\A\s*(?:no|0|zero) (?:data|series|results?|matches|log lines|lines|logs|log entries|entries|traces?|"
    r"spans|commits?|pull requests|events|samples|data ?points|resources)\b",
    re.IGNORECASE,
)
_EMPTY_JSON = re.compile(r"\"(?:result|traces|data|items|values|streams)\"\s*:\s*\[\s*\]")


def _failed_or_empty(text: str) -> bool:
    return any(
        pattern.search(text) for pattern in (_TOOL_FAILURE, _EMPTY_WHOLE, _EMPTY_FIRST_LINE, _EMPTY_JSON)
    )


# --- text: signals embedded in text ------------------------------------------------------------

_PAIR = re.compile(
    r"(?<![\w.:-])([a-z0-9_][\w.-]*(?: [a-z0-9_][\w.-]*){0,3})[\"']?\s*[:=]\s*[\"']?"
    r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?\s*(?:%|ms|µs|us|ns|s|sec|seconds)?)(?![\w.])",
    re.IGNORECASE,
)
_SAMPLE = re.compile(  # promtool / exposition: name{labels} => 0.37 @[ts]   or   name{labels} 0.37
    r"^\s*([a-z_:][\w:]*)\{[^}\n]*\}\s+(?:=>\s*)?(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\b",
    re.IGNORECASE | re.MULTILINE,
)
_JSON_SAMPLE = re.compile(  # Prometheus HTTP API vector sample with a metric name
    r"\"__name__\"\s*:\s*\"([^\"]+)\"[^{}]*\}\s*,\s*\"value\"\s*:\s*\[\s*[\d.]+\s*,\s*\"([^\"]+)\"\s*\]"
)
# "0/3 pods ready", "1 of 3 updated replicas are available"
_FRACTION = re.compile(r"\b(\d+)\s*(?:/|of)\s*(\d+)\s+(?:\w+\s+){0,3}(?:ready|available)\b", re.IGNORECASE)
_TABLE_HEADER = re.compile(r"^(?:NAMESPACE\s{2,})?NAME\s{2,}[A-Z]")
_READY_CELL = re.compile(r"(\d+)/(\d+)")
_DONE_STATUSES = frozenset({"completed", "succeeded"})


def _table_pairs(lines: list[str]) -> Iterator[tuple[str, SignalValue]]:
    """Signals from kubectl tables: RESTARTS and READY columns, row by row."""
    columns: list[str] = []
    for line in lines:
        if _TABLE_HEADER.match(line) and line == line.upper():
            columns = re.split(r"\s{2,}", line.strip())
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if not columns or len(cells) != len(columns):
            columns = columns if line.strip() else []
            continue
        row = dict(zip(columns, cells, strict=True))
        restarts = re.match(r"\d+", row.get("RESTARTS", ""))
        if restarts:
            yield "restarts", int(restarts.group(0))
        ready = _READY_CELL.fullmatch(row.get("READY", ""))
        if ready and row.get("STATUS", "").lower() not in _DONE_STATUSES:
            yield "unavailable_replicas", max(int(ready.group(2)) - int(ready.group(1)), 0)


def _text_pairs(text: str) -> Iterator[tuple[str, SignalValue]]:
    yield from _table_pairs(text.splitlines())
    for pattern in (_PAIR, _SAMPLE, _JSON_SAMPLE):
        for match in pattern.finditer(text):
            yield match.group(1), match.group(2)
    for match in _FRACTION.finditer(text):
        yield "unavailable_replicas", max(int(match.group(2)) - int(match.group(1)), 0)


def _collect(pairs: Iterable[tuple[str, SignalValue]]) -> _Signals:
    signals = _Signals()
    for key, raw in pairs:
        signals.add(key, raw)
    return signals


# --- text: negation-aware cues -----------------------------------------------------------------

_FAULT_CUE = re.compile(
    r"\b(?:errors?|exceptions?|\w+(?:error|exception)s?|fail(?:s|ed\w*|ing|ures?)?|fatal|unable to|"
    r"panic(?:s|ked)?|crash\w*|time[sd]? ?outs?|timed out|deadline exceeded|"
    r"exceeded (?:its )?(?:progress )?deadline|insufficient|notready|refused|unavailable|unreachable|"
    r"unhealthy|degraded|"
    r"oom\w*|out of memory|\w*back-?off|errimagepull|evicted|denied|forbidden|unauthorized|"
    r"5xx|internal server error|bad gateway|rollback|rolled back|mismatch|connection reset|broken pipe|"
    r"no route to host|spik(?:e|es|ed|ing)|elevated|saturat\w*|throttl\w*|exhausted|killed|sigsegv|"
    r"segfault|deadlock\w*|status_code_error|high latency|slow(?:er|ness)?)\b"
    r"|(?:status|code|http/\d(?:\.\d)?)[\"'=: ]{0,4}5\d\d\b"
    r"|status_code\"[^{}]{0,40}?\"value\"\s*:\s*\"?5\d\d\b",  # OpenTelemetry / Jaeger tag
    re.IGNORECASE,
)
_HEALTH_CUE = re.compile(
    r"\b(?:healthy|ok|ready|running|succeeded|successful(?:ly)?|passed|passing|nominal|stable|resolved|"
    r"status_code_ok|within (?:the )?(?:normal|expected|baseline|slo|threshold)\w*(?: range)?|"
    r"normal range)\b"
    r"|(?:status|code|http/\d(?:\.\d)?)[\"'=: ]{0,4}2\d\d\b"
    r"|status_code\"[^{}]{0,40}?\"value\"\s*:\s*\"?2\d\d\b",
    re.IGNORECASE,
)
# Phrases that contain a cue word but report no fault.
_BENIGN = re.compile(
    r"\berror[ _-]?budget\w*|\b(?:error|warn\w*|info|debug)\s+log[ _-]?level\b"
    r"|\blog[ _-]?level\s*[:=]?\s*[\"']?(?:error|warn\w*)\b"
    r"|\b(?:on|if|when)[ _-]errors?\b|\berrors?[ _-]?(?:handler|handling|page|pages)\b|\berrors?\.go\b"
    r"|\"error\"\s*:\s*(?:null|false|\"\"|\[\]|\{\})"
    r"|\"key\"\s*:\s*\"error\"\s*,\s*\"type\"\s*:\s*\"bool\"\s*,\s*\"value\"\s*:\s*false"
    r"|\b(?:err|error)\s*[=:]\s*(?:<nil>|nil|null|none|false)\b|\bnoerror\b",
    re.IGNORECASE,
)
_CLAUSE_SPLIT = re.compile(r"[\n;|]|(?<=[.!?,])\s+|\b(?:but|however|although|whereas|yet)\b", re.IGNORECASE)
_NEGATORS = frozenset({"no", "not", "never", "without", "zero", "none", "nothing", "neither", "nor", "non"})
_ZERO = re.compile(r"0(?:\.0+)?%?")
_PRE_WINDOW = 4
_NONE_OF = re.compile(r"\b(?:none|neither) of\b", re.IGNORECASE)
_POST_NEGATION = re.compile(
    r"\A(?:\s*(?:found|detected|observed|seen|reported|count|total|lines?|rate))?\s*[:=]?\s*[\"']?"
    r"(?:0+(?:\.0+)?%?|none|false|null|nil|<nil>|<none>)(?![\w.])"
    # "errors not found", "error rate not elevated", "error count normal": a cue reported as normal.
    r"|\A(?:\s*(?:rates?|counts?|lines?|ratios?|spans?|levels?|logs?))?\s*[:=]?\s*"
    r"(?:(?:were|was|is|are|has been|have been|stays?|stayed|remains?|remained)\s+)?"
    r"(?:not\s+(?:found|detected|present|seen|observed|reported|elevated|raised|increased|high(?:er)?|"
    r"above\w*|abnormal|anomalous)|normal|unchanged|nominal|at (?:the )?baseline)\b"
    r"|\A-?free\b",
    re.IGNORECASE,
)


def _negated(clause: str, start: int, end: int, *, after: bool = True) -> bool:
    """Whether the cue at ``clause[start:end]`` is negated.

    Negators count within a few tokens before the cue; "none of ..." scopes over its whole clause;
    with ``after``, a zero or "not found" right after the cue negates it too ("errors: 0").
    """
    if _NONE_OF.search(clause, 0, start):
        return True
    for token in re.findall(r"[\w'\u2019.%/-]+", clause[:start])[-_PRE_WINDOW:]:
        word = token.lower().rstrip(".")
        if word in _NEGATORS or word.endswith(("n't", "n\u2019t")) or _ZERO.fullmatch(word):
            return True
    return after and _POST_NEGATION.match(clause[end:]) is not None


def _lexical(text: str, t: Thresholds) -> Verdict:
    fault = healthy = False
    for clause in _CLAUSE_SPLIT.split(_BENIGN.sub(" ", text)):
        for match in _FAULT_CUE.finditer(clause):
            if _negated(clause, match.start(), match.end()):
                healthy = True
            else:
                fault = True
        for match in _HEALTH_CUE.finditer(clause):
            # "not ready", "no longer healthy": a negated health cue reports a fault.
            if _negated(clause, match.start(), match.end(), after=False):
                fault = True
            else:
                healthy = True
    if fault:
        return Verdict.SUPPORTS
    if healthy and t.healthy_text_refutes:
        return Verdict.REFUTES
    return Verdict.INCONCLUSIVE


# --- public API --------------------------------------------------------------------------------


_ENTITY_MASK = "entity"  # a neutral word: no cue, no negator, no key a signal pattern reads


def mask_entities(text: str, entities: Iterable[str]) -> str:
    """``text`` with every whole occurrence of an entity name replaced by a neutral word.

    Longest names first, so a name containing another is masked whole; a name only counts where it
    is not part of a longer identifier (`cart` inside `carts-db` is left to `carts-db`).
    """
    names = sorted({e for e in entities if e.strip()}, key=len, reverse=True)
    if not names:
        return text
    pattern = re.compile(
        r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w-]|\.\w)", re.IGNORECASE
    )
    return pattern.sub(_ENTITY_MASK, text)


def classify_text(
    text: str, thresholds: Thresholds = DEFAULT_THRESHOLDS, entities: Iterable[str] = ()
) -> Verdict:
    """Classify free text alone: failure/empty shapes, then embedded signals, then cues.

    ``entities`` are masked first (`mask_entities`): a name is never a word of the verdict.
    """
    text = mask_entities(text, entities)
    if _failed_or_empty(text):
        return Verdict.INCONCLUSIVE
    judged = _judge(_collect(_text_pairs(text)), None, thresholds)
    return judged if judged is not None else _lexical(text, thresholds)


def classify(output: ToolOutput, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Verdict:
    """Classify one tool result: failure and structure guards, then structured signals, then its text."""
    if output.failed or output.structural:
        return Verdict.INCONCLUSIVE
    window = None
    if output.onset_start is not None and output.onset_end is not None:
        window = (output.onset_start, output.onset_end)
    judged = _judge(_collect(output.signals.items()), window, thresholds)
    return judged if judged is not None else classify_text(output.text, thresholds, output.entities)
