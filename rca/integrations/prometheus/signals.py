"""What a Prometheus metric means to the tools: its type, and the signals (PromQL expressions) read from it.

A counter is read as its per-second rate, a histogram as `histogram_quantile()` over its buckets' rates
(and the rate of its `_count`), a summary's quantiles per pod (they are computed in each process and
cannot be pooled), a gauge as it is. Read at the scrape interval, a rate is `irate()`, the
rate between the last two scrapes (what the counter did in that interval, as a recorded per-interval
series holds it); `rate()` over Grafana's `$__rate_interval` (four scrapes) would spread a one-interval
burst over four points, and a tail quantile of four intervals' pooled buckets is the burst's for all four.
Read at a coarser step, a rate is `rate()` over the step and a scrape, the step's average. The type comes
from Prometheus's metadata API and, for a metric it does not describe (backfilled data, federation), from
the naming convention: `_total` is a counter, `_bucket` / `_count` / `_sum` a histogram (a summary is
told from a gauge by its metadata only).

Discovery is by relevance: the series of the conventions real clusters use (cAdvisor, kube-state-metrics,
OpenTelemetry HTTP semantic conventions or a Micrometer HTTP timer, the Collector's span-metrics and
service-graph connectors) come first, under the names of the tools' vocabulary (`latency_p99`,
`error_ratio`, `cpu_usage_cores`, ...), then every other metric of the entity, derived by its type. Each
signal's expression has `{sel}` where the entity's label matchers go, `{per}` the rate function and
`{rate}` its range; a signal whose series name the entity by a label of their own (the service graph's
`server`: the calls the entity serves, as its callers' spans and its own measured them) has that one
matcher there instead.

A quantile read from a histogram is known only to the bucket it falls in (`histogram_quantile()` places
it inside by linear interpolation, an assumption rather than a measurement): the same query carries the
histogram's bucket bounds, and each point its bucket's width (`MetricSeries.resolution`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from rca.integrations.parsing import quote
from rca.telemetry.model import edge_metric_name


class MetricType(StrEnum):
    """Prometheus metric types (those of `/api/v1/metadata`)."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"
    SUMMARY = "summary"
    UNKNOWN = "unknown"


# The suffixes a histogram's series add to its family name (Prometheus exposition format).
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")
# Quantiles a histogram is read at: the median and the tail latency SLOs usually name.
QUANTILES = (0.5, 0.99)
# Quantiles a summary is read at where it exports them: those a client library's or Micrometer's
# `percentiles` setting commonly names (a summary carries only the quantiles it was configured with).
SUMMARY_QUANTILES = (0.5, 0.9, 0.95, 0.99)


def type_from_name(name: str) -> MetricType:
    """The type the naming convention implies: `_total` a counter, histogram suffixes a histogram."""
    if name.endswith("_total"):
        return MetricType.COUNTER
    if name.endswith(HISTOGRAM_SUFFIXES):
        return MetricType.HISTOGRAM
    return MetricType.GAUGE


def family_name(name: str) -> str:
    """The metadata family of a series name (a histogram's `_bucket` / `_count` / `_sum` removed)."""
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def metric_type(name: str, metadata: Mapping[str, MetricType]) -> MetricType:
    """The type of series `name`: from the metadata of it or its family, else from its name."""
    for key in (name, family_name(name)):
        found = metadata.get(key)
        if found is not None and found is not MetricType.UNKNOWN:
            return found
    return type_from_name(name)


@dataclass(frozen=True, slots=True)
class Signal:
    """One series the tools read: a PromQL expression over the entity's selector, and its unit."""

    name: str  # the name the tools see (their families are read from it)
    expr: str  # with `{sel}` (the entity's matchers, comma-joined), `{per}` (rate / irate), `{rate}` (range)
    unit: str
    source: str  # the Prometheus metric it is read from (what discovery must have found)
    by: str | None = None  # the label naming the entity in its series, instead of the entity's matchers
    # A quantile's bucket series selector (with `{sel}`): its value is known only to the bucket it falls in.
    buckets: str = ""
    # A failed share's failure series, any entity's (no `{sel}`): their absence reads as a share of 0 only
    # where the store records failures at all (see `PrometheusConnector.records`).
    failures: str = ""
    # The label naming the other end of a call edge: the signal is one series per edge, named
    # `<name>{caller=<entity>,callee=<that label's value>}` (the tools' edge-series convention).
    edge: str | None = None


def _by_bucket(edge: str | None) -> str:
    """The labels a histogram's buckets are kept apart by: the bound, and per edge the edge's label."""
    return f"le, {edge}" if edge else "le"


def _buckets(family: str, extra: str = "") -> str:
    sel = "{sel}" + (", " + extra if extra else "")
    return f"{family}_bucket{{{sel}}}"


def _quantile_signal(
    name: str,
    family: str,
    q: float,
    unit: str,
    source: str,
    extra: str = "",
    by: str | None = None,
    edge: str | None = None,
) -> Signal:
    """A histogram quantile, read over the rates of its buckets (which the signal keeps, see `bounds`);
    per value of the `edge` label when there is one."""
    buckets = _buckets(family, extra)
    expr = f"histogram_quantile({q:g}, sum by ({_by_bucket(edge)}) ({{per}}({buckets}[{{rate}}])))"
    return Signal(name, expr, unit, source, by, buckets, edge=edge)


def _rate(series: str, extra: str = "", by: str = "") -> str:
    sel = "{sel}" + (", " + extra if extra else "")
    return f"sum{f' by ({by})' if by else ''}({{per}}({series}{{{sel}}}[{{rate}}]))"


def _ratio(series: str, bad: str, by: str = "") -> str:
    # No bad series at all is a ratio of 0, not a missing one (a service with no errors yet).
    return f"(({_rate(series, bad, by)}) or (0 * {_rate(series, by=by)})) / {_rate(series, by=by)}"


def _percentile(q: float) -> str:
    return f"p{round(q * 100)}"


def _http(family: str, prefix: str) -> tuple[Signal, ...]:
    """An OpenTelemetry HTTP duration histogram: quantiles, request rate, 5xx share.

    The 5xx share is read per pod where the series carry one (`k8s.pod.name`, the Collector's
    k8sattributes processor; series without it read as one, the service's): a new version's failing pods
    are then told from its old ones (a canary), which a service-wide share cannot do. The quantiles are
    the service's: a pod serves a share of its requests, and a tail quantile of fewer requests hops
    between bucket bounds (a replayed ChangeRCA pod's p99 read 10 sigma, 0.010 -> 0.025 s, one bucket
    up, where its recorded mean latency moved 4)."""
    count = f"{family}_count"
    status = 'http_response_status_code=~"5.."'
    return (
        *(
            _quantile_signal(f"{prefix}latency_{_percentile(q)}", family, q, "s", count)
            for q in reversed(QUANTILES)
        ),
        Signal(
            f"{prefix}error_ratio",
            _ratio(count, status, OTEL_POD),
            "1",
            count,
            failures=f"{count}{{{status}}}",
        ),
        Signal(f"{prefix}requests_per_second", _rate(count), "1/s", count),
    )


def _summary_quantile(name: str, family: str, q: float, unit: str) -> Signal:
    """A quantile a summary exports, per pod: quantiles are computed in each process and cannot be added
    up, so the highest of a pod's series (one per route, status, ...) stands for it, an upper bound of
    the pod's own; a summary without the quantile gives no series."""
    expr = f'max by ({POD}) ({family}{{{{sel}}, quantile="{q:g}"}})'
    return Signal(name, expr, unit, family)


def _micrometer(family: str, prefix: str) -> tuple[Signal, ...]:
    """A Micrometer HTTP timer published with percentiles (Spring Boot's `http.server.requests`, a summary
    tagged `status`): its quantiles, request rate and 5xx share, per pod as the quantiles are."""
    count = f"{family}_count"
    status = 'status=~"5.."'
    return (
        *(
            _summary_quantile(f"{prefix}latency_{_percentile(q)}", family, q, "s")
            for q in reversed(SUMMARY_QUANTILES)
        ),
        Signal(
            f"{prefix}error_ratio", _ratio(count, status, POD), "1", count, failures=f"{count}{{{status}}}"
        ),
        Signal(f"{prefix}requests_per_second", _rate(count, by=POD), "1/s", count),
    )


def _service_graph(prefix: str) -> tuple[Signal, ...]:
    """The service graph connector's series of the calls an entity serves (`server`), summed over its
    callers: server-side quantiles, failed share, request rate."""
    family = "traces_service_graph_request_server_seconds"
    calls = "traces_service_graph_request_total"
    failed = "traces_service_graph_request_failed_total"
    return (
        *(
            _quantile_signal(
                f"{prefix}latency_{_percentile(q)}", family, q, "s", f"{family}_bucket", by=SERVER
            )
            for q in reversed(QUANTILES)
        ),
        Signal(
            f"{prefix}error_ratio",
            f"(({_rate(failed)}) or (0 * {_rate(calls)})) / {_rate(calls)}",
            "1",
            calls,
            SERVER,
            failures=failed,
        ),
        Signal(f"{prefix}requests_per_second", _rate(calls), "1/s", calls, SERVER),
    )


# A container's resources are read per pod, as cAdvisor reports them and as a recording holds them: their
# sum over a service's pods rises whenever a rollout or a scale-up adds pods, which is no saturation.
POD = "pod"
OTEL_POD = "k8s_pod_name"  # the OpenTelemetry resource attribute k8s.pod.name, as Prometheus labels it
SERVER = "server"  # the service graph connector's label for the called service
CLIENT = "client"  # and for the calling one
SPAN_ERROR = 'status_code="STATUS_CODE_ERROR"'  # the span metrics connector's failed spans
# The span metrics connector's spans per operation, and their durations (a histogram in milliseconds).
SPAN_CALLS = "traces_span_metrics_calls_total"
SPAN_DURATION = "traces_span_metrics_duration_milliseconds"
# Real clusters' conventions, most telling first (docs/live-conventions.md has the table the replay
# writes; the names are the semantic conventions' and the exporters' own).
CONVENTIONS: tuple[Signal, ...] = (
    *_http("http_server_request_duration_seconds", ""),
    *_http("http_client_request_duration_seconds", "client_"),
    *_micrometer("http_server_requests_seconds", ""),
    *_micrometer("http_client_requests_seconds", "client_"),
    _quantile_signal(
        "span_latency_p99",
        SPAN_DURATION,
        0.99,
        "ms",
        f"{SPAN_DURATION}_bucket",
        'span_kind="SPAN_KIND_SERVER"',
    ),
    Signal(
        "span_error_ratio",
        _ratio(SPAN_CALLS, SPAN_ERROR),
        "1",
        SPAN_CALLS,
        failures=f"{SPAN_CALLS}{{{SPAN_ERROR}}}",
    ),
    Signal(
        "span_requests_per_second",
        _rate(SPAN_CALLS, 'span_kind="SPAN_KIND_SERVER"'),
        "1/s",
        SPAN_CALLS,
    ),
    *_service_graph("call_"),
    # What the entity waited on each service it calls, as its client spans measured it: a delay between
    # the two (the callee's network) shows here and not in the callee's server-side time.
    *(
        _quantile_signal(
            f"client_call_latency_{_percentile(q)}",
            "traces_service_graph_request_client_seconds",
            q,
            "s",
            "traces_service_graph_request_client_seconds_bucket",
            by=CLIENT,
            edge=SERVER,
        )
        for q in reversed(QUANTILES)
    ),
    Signal(
        "cpu_usage_cores",
        _rate("container_cpu_usage_seconds_total", 'container!="", container!="POD"', POD),
        "1",
        "container_cpu_usage_seconds_total",
    ),
    Signal(
        "memory_working_set_bytes",
        f'sum by ({POD}) (container_memory_working_set_bytes{{{{sel}}, container!="", container!="POD"}})',
        "By",
        "container_memory_working_set_bytes",
    ),
    Signal(
        "network_receive_bytes_per_second",
        _rate("container_network_receive_bytes_total", by=POD),
        "By/s",
        "container_network_receive_bytes_total",
    ),
    Signal(
        "network_transmit_bytes_per_second",
        _rate("container_network_transmit_bytes_total", by=POD),
        "By/s",
        "container_network_transmit_bytes_total",
    ),
    Signal(
        "restarts",
        f"sum by ({POD}) (increase(kube_pod_container_status_restarts_total{{{{sel}}}}[{{rate}}]))",
        "1",
        "kube_pod_container_status_restarts_total",
    ),
)
SCRAPE_SERIES = (
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
)
# Series a convention above reads, or that describe objects rather than measure an entity.
_COVERED = frozenset(
    {s.source for s in CONVENTIONS}
    | {
        f"{fam}{suffix}"
        for fam in (
            "http_server_request_duration_seconds",
            "http_client_request_duration_seconds",
            SPAN_DURATION,
            "traces_service_graph_request_server_seconds",
            "traces_service_graph_request_client_seconds",
        )
        for suffix in HISTOGRAM_SUFFIXES
    }
    | {
        f"{fam}{suffix}"
        for fam in ("http_server_requests_seconds", "http_client_requests_seconds")
        for suffix in ("", "_count", "_sum", "_max")
    }
    | {
        "traces_service_graph_request_failed_total",
        "kube_pod_owner",
        "kube_replicaset_owner",
        "kube_replicaset_created",
        "kube_replicaset_labels",
        "kube_pod_labels",
        "kube_pod_info",
        "ALERTS",
        "ALERTS_FOR_STATE",
    }
    # What Prometheus writes about each scrape of a target: the scrape's health, not the entity's.
    | set(SCRAPE_SERIES)
)


def derived(name: str, kind: MetricType) -> tuple[Signal, ...]:
    """The signals of a metric no convention covers, by its type (a histogram's from its `_bucket`)."""
    if kind is MetricType.COUNTER:
        return (Signal(name, _rate(name), "1/s", name),)
    if kind is MetricType.HISTOGRAM:
        if not name.endswith("_bucket"):
            return ()  # `_count` and `_sum` belong to the family read through its buckets
        family = name.removesuffix("_bucket")
        return tuple(_quantile_signal(f"{family}_{_percentile(q)}", family, q, "", name) for q in QUANTILES)
    if kind is MetricType.SUMMARY:
        if name.endswith(HISTOGRAM_SUFFIXES):
            return ()  # `_count` and `_sum` belong to the family read through its quantiles
        return tuple(_summary_quantile(f"{name}_{_percentile(q)}", name, q, "") for q in SUMMARY_QUANTILES)
    return (Signal(name, f"sum({name}{{{{sel}}}})", "", name),)


def signals_for(names: Iterable[str], metadata: Mapping[str, MetricType]) -> list[Signal]:
    """The entity's signals, by relevance: the conventions whose series it has, then the rest by type; one
    signal per name (an entity exporting both an OpenTelemetry histogram and a Micrometer summary of its
    requests is read through the histogram, which pools its pods)."""
    present = set(names)
    out = [s for s in CONVENTIONS if s.source in present]
    for name in sorted(present - _COVERED):
        out.extend(derived(name, metric_type(name, metadata)))
    unique: dict[str, Signal] = {}
    for signal in out:
        unique.setdefault(signal.name, signal)
    return list(unique.values())


def own_matchers(entity: str) -> list[str]:
    """The matchers of the labels by which some conventions' series name `entity` (see `Signal.by`)."""
    return [f"{label}={quote(entity)}" for label in sorted({s.by for s in CONVENTIONS if s.by})]


def selectors_of(signal: Signal, matchers: Iterable[str], entity: str) -> list[str]:
    """The matchers that select `entity`'s series of `signal`: its own label's, else the entity's."""
    return [f"{signal.by}={quote(entity)}"] if signal.by else list(matchers)


def _labelled(expr: str, label: str, signal: Signal, entity: str) -> str:
    """`expr` with the series name in `label`: the signal's, or per edge its edge series' name."""
    if signal.edge is None:
        return f'label_replace({expr}, "{label}", "{signal.name}", "", "")'
    name = quote(edge_metric_name(signal.name, entity, "$1"))
    return f'label_replace({expr}, "{label}", {name}, "{signal.edge}", "(.+)")'


def render(signal: Signal, matchers: Iterable[str], rate: str, entity: str, per: str = "rate") -> str:
    """The signal's expression over each of `entity`'s selectors in turn (`or`: the first that has data),
    its rates by `per` over `rate`, labelled with the signal's name so one query can carry many signals."""
    alternatives = " or ".join(
        f"({signal.expr.replace('{sel}', sel).replace('{per}', per).replace('{rate}', rate)})"
        for sel in selectors_of(signal, matchers, entity)
    )
    return _labelled(alternatives, SIGNAL_LABEL, signal, entity)


def render_bounds(signal: Signal, matchers: Iterable[str], entity: str) -> str:
    """The bucket bounds (`le`) a quantile signal's histogram has at each step, one series per bound,
    labelled with the signal's name in `BOUNDS_LABEL` (so they travel in the signals' own query)."""
    alternatives = " or ".join(
        f"(group by ({_by_bucket(signal.edge)}) ({signal.buckets.replace('{sel}', sel)}))"
        for sel in selectors_of(signal, matchers, entity)
    )
    return _labelled(alternatives, BOUNDS_LABEL, signal, entity)


SIGNAL_LABEL = "rootline_signal"  # the label a rendered signal carries its name in
BOUNDS_LABEL = "rootline_bounds_of"  # the label the bucket bounds of a quantile signal carry its name in
