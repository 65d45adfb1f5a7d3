"""What a Prometheus alert watches: its metric and entity, from its labels and its rule's PromQL.

Prometheus puts the rule's expression in the alert's `generatorURL` (`/graph?g0.expr=...`); it is parsed
(promql-parser) for the metric names and label matchers it selects. The metric the tools read is the
first selected series' name, marked `_error_ratio` when a matcher picks failures out (5xx status codes, an
ERROR span status), since the same `_count` series measures latency and errors alike, and `_latency` when
it is a duration histogram's buckets or sum (`..._seconds_bucket`): such a series measures how long
requests take whatever else its name says (the service graph's `traces_service_graph_request_client_seconds`
names requests, not time), and the tools weigh the evidence by the family the alert fired on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import promql_parser

from rca.integrations.otel import service_from_pod
from rca.integrations.prometheus.signals import family_name

# A matcher that selects failures: an HTTP 5xx status code (OTel `http.response.status_code`, the older
# `status_code` / `code`) or an OTel span status of ERROR (the span-metrics connector's `status_code`).
_FAILURE_LABEL = re.compile(r"(?:^|_)(?:status_code|code|status)$")
_FAILURE_VALUE = re.compile(r"^5|error", re.IGNORECASE)
# A duration's base unit by the Prometheus and OpenTelemetry naming conventions (`_seconds`, and the span
# metrics connector's `_milliseconds`), and the series of a histogram that read as its durations: the
# buckets (`histogram_quantile`) and the sum (over `_count`, the mean).
_DURATION = re.compile(r"_(?:seconds|milliseconds)$")
_DURATION_SERIES = ("_bucket", "_sum")
# Series Prometheus itself writes about alerts; never the watched metric.
_OWN_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE"})


@dataclass(frozen=True, slots=True)
class Selector:
    """One vector selector of an expression: its metric name and its label matchers."""

    name: str
    matchers: tuple[tuple[str, str, str], ...]  # (label, operator, value), operator as PromQL writes it


@dataclass(frozen=True, slots=True)
class AlertTarget:
    """The metric and entity an alert watches (None where neither labels nor expression say)."""

    metric: str | None
    entity: str | None
    failures: bool = False  # its expression counts failed requests (an error ratio, a failures counter)


_OPERATORS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}


def expression_of(generator_url: str) -> str | None:
    """The PromQL of a Prometheus `generatorURL` (its `g0.expr`), None when it carries none."""
    found = parse_qs(urlsplit(generator_url).query).get("g0.expr")
    return found[0] if found else None


def selectors(expr: str) -> list[Selector]:
    """The vector selectors of a PromQL expression, in the order they appear.

    Raises ValueError for an expression that does not parse.
    """
    tree = promql_parser.parse(expr)
    found: list[Selector] = []

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            matchers = tuple(
                (m.name, _OPERATORS.get(str(m.op).rsplit(".", 1)[-1], "="), m.value)
                for m in node.matchers.matchers
            )
            name = node.name or next((v for k, op, v in matchers if k == "__name__" and op == "="), "")
            found.append(Selector(name, tuple(m for m in matchers if m[0] != "__name__")))

    promql_parser.walk(tree, visit)
    return found


def _failures(selector: Selector) -> bool:
    return (
        any(
            op in ("=", "=~") and _FAILURE_LABEL.search(label) and _FAILURE_VALUE.search(value)
            for label, op, value in selector.matchers
        )
        or "fail" in selector.name
    )


def _watched(name: str) -> str:
    """The metric name the tools read for a selected series without failures: a duration histogram's
    buckets or sum marked as the latency they measure (see the module docstring), any other as it is."""
    family = family_name(name)
    return f"{family}_latency" if name.endswith(_DURATION_SERIES) and _DURATION.search(family) else name


def _entity(
    labels: Mapping[str, str], found: Iterable[Selector], service_labels: Iterable[str]
) -> str | None:
    """The service the alert is about: a service label of the alert, else one the expression matches
    exactly, else the workload of a pod it matches, else the container it matches."""
    keys = tuple(service_labels)
    exact = [{k: v for k, op, v in s.matchers if op == "="} for s in found]
    for source in (labels, *exact):
        for key in keys:
            value = source.get(key)
            if value:
                return value.rsplit("/", 1)[-1] if key == "job" else value
    for source in (labels, *exact):
        if source.get("pod"):
            return service_from_pod(source["pod"])
        if source.get("container"):
            return source["container"]
    return None


def alert_target(labels: Mapping[str, str], generator_url: str, service_labels: Iterable[str]) -> AlertTarget:
    """The metric and entity of an alert, from its labels and its rule's expression.

    An expression that does not parse leaves both to the labels (a `metric` label names the metric).
    """
    expr = expression_of(generator_url)
    found: list[Selector] = []
    if expr:
        try:
            found = [s for s in selectors(expr) if s.name not in _OWN_SERIES]
        except ValueError:
            found = []
    metric = labels.get("metric") or None
    failing = next((s for s in found if _failures(s)), None)
    if metric is None and found:
        if failing is None:
            metric = _watched(found[0].name)
        elif "fail" in failing.name:
            metric = failing.name  # a failures counter (the service graph's `..._failed_total`)
        else:
            metric = f"{failing.name}_error_ratio"
    return AlertTarget(
        metric=metric, entity=_entity(labels, found, service_labels), failures=failing is not None
    )
