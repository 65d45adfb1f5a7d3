"""Prometheus HTTP API connector: `query_range` matrices to MetricSeries, and metric-name listing."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from rca.integrations.http import HttpClient
from rca.integrations.otel import SAFE, entity_from_labels
from rca.integrations.parsing import (
    ShapeError,
    as_dict,
    as_list,
    as_number,
    as_str,
    quote,
    regex_literal,
)
from rca.integrations.prometheus.signals import (
    BOUNDS_LABEL,
    SIGNAL_LABEL,
    SPAN_CALLS,
    SPAN_DURATION,
    MetricType,
    Signal,
    derived,
    metric_type,
    own_matchers,
    render,
    render_bounds,
    selectors_of,
    signals_for,
)
from rca.telemetry.model import (
    Event,
    EventKind,
    FloatArray,
    MetricSeries,
    OperationDurations,
    TimeWindow,
    split_edge_name,
)

# The labels that name a service, in order: OpenTelemetry's `service.name` (and `job`, which its
# Prometheus exporters set to `service.namespace/service.name`), then Kubernetes' recommended
# `app.kubernetes.io/name` and the older `app` (as kube-state-metrics / the Prometheus operator write
# pod labels); `ROOTLINE_SERVICE_LABELS` replaces them. Series that only name a pod or container reach
# the service through the pod's workload.
DEFAULT_ENTITY_LABELS: tuple[str, ...] = ("service_name", "service", "job", "app_kubernetes_io_name", "app")
# Queries one investigation may send: discovery (1), owner references (2) and two windows of series (2)
# for each of the at most ~25 entities an investigation examines (its turn budget), whether failures are
# counted (`records`: 3 kinds per window), with 4x headroom for the tools' own look-ups; a runaway loop
# is stopped well before it loads a real Prometheus.
MAX_QUERIES = 500
SERVICE_GRAPH = "traces_service_graph_request_total"  # the service graph connector's request counter
OPERATION = "service_name, span_name"  # the connector's labels of one operation
REPLICASET_CREATED = "kube_replicaset_created"  # kube-state-metrics: a ReplicaSet's creation, Unix time
# How far back the scrape interval is measured (seconds): four samples even at a 5-minute scrape.
SCRAPE_PROBE = 1200.0
# How far back an alert's condition is traced (seconds), at Prometheus's default evaluation interval: the
# engine looks 10 minutes before its onset hint, and a condition that held for longer began before any
# incident window would start anyway.
CONDITION_LOOKBACK = 1800.0
EVALUATION_INTERVAL = 15.0

# Unit suffixes of the Prometheus / OpenTelemetry naming conventions, checked after the
# counter / histogram suffixes are stripped; units are UCUM as OTel writes them.
_TYPE_SUFFIXES = ("_total", "_count", "_sum", "_bucket")
_UNIT_SUFFIXES = (
    ("_seconds", "s"),
    ("_milliseconds", "ms"),
    ("_bytes", "By"),
    ("_ratio", "1"),
    ("_percent", "%"),
    ("_celsius", "Cel"),
)


def unit_from_name(name: str) -> str:
    """The unit a Prometheus metric name declares by its suffix ('' when it declares none)."""
    base = name
    for suffix in _TYPE_SUFFIXES:
        if base.endswith(suffix):
            base = base.removesuffix(suffix)
            if suffix == "_count":
                return "1"
            break
    for suffix, unit in _UNIT_SUFFIXES:
        if base.endswith(suffix):
            return unit
    return "1" if name.endswith("_total") else ""


def pod_name_pattern(workload: str) -> str:
    """An RE2 pattern for the pods a workload's controller names: `<deployment>-<rs hash>-<5>`,
    `<statefulset>-<ordinal>`, `<daemonset or job>-<5>` (Kubernetes' generated-name convention)."""
    name = regex_literal(workload)
    return f"{name}-{SAFE}{{6,10}}-{SAFE}{{5}}|{name}-[0-9]+|{name}-{SAFE}{{5}}"


def deployment_of(replicaset: str, owners: Mapping[str, str]) -> str:
    """The Deployment a ReplicaSet belongs to: its owner reference (`kube_replicaset_owner`), else its
    name less the pod-template hash the Deployment controller appends."""
    return owners.get(replicaset) or replicaset.rsplit("-", 1)[0]


def bucket_widths(values: FloatArray, bounds: Iterable[float]) -> FloatArray:
    """The width of the histogram bucket each quantile value falls in, as `histogram_quantile()` reads
    buckets: bucket k spans (bound k-1, bound k], the lowest one starts at 0 when its bound is positive,
    and a quantile in the `+Inf` bucket is reported as the highest finite bound. NaN where the value is."""
    finite = np.array(sorted({b for b in bounds if math.isfinite(b)}), dtype=np.float64)
    if not finite.size:
        return np.full(values.shape, np.nan)
    lower = np.concatenate(([0.0 if finite[0] > 0 else finite[0]], finite[:-1]))
    index = np.minimum(np.searchsorted(finite, values, side="left"), finite.size - 1)
    return np.where(np.isfinite(values), (finite - lower)[index], np.nan)


def _asked(name: str, wanted: set[str]) -> bool:
    """Whether series `name` answers a request for `wanted`: of an edge signal's series, the edges asked
    for (or every edge, asked by the signal's name); any other series its query returned."""
    base, caller, _ = split_edge_name(name)
    return caller is None or name in wanted or base in wanted


def status_data(client: HttpClient, body: Any, what: str) -> Any:
    """The `data` of a Prometheus-style envelope (`{"status": "success", "data": ...}`).

    Loki speaks the same envelope. A body with `status: error` (errorType / error) becomes a
    BackendError carrying the server's own explanation.
    """
    with client.parsing(what):
        envelope = as_dict(body, what)
        status = envelope.get("status")
        if status == "error":
            raise client.error(
                f"{what} answered status=error: {envelope.get('errorType', 'error')}: "
                f"{envelope.get('error', 'no message')}"
            )
        if status != "success":
            raise ShapeError(f"status is {status!r}, expected 'success'")
        return envelope.get("data")


class PrometheusConnector:
    """Metric series from the Prometheus HTTP API, read by type and discovered by relevance.

    One connector serves one investigation (`LiveSource` makes one per run), so its caches (metadata,
    an entity's pods and signals) and its query budget are per investigation.
    """

    def __init__(
        self,
        client: HttpClient,
        *,
        entity_labels: Sequence[str] = DEFAULT_ENTITY_LABELS,
        max_points: int = 1000,
        min_step: float | None = None,
        max_signals: int = 40,
        max_queries: int = MAX_QUERIES,
        scrape_interval: float = 15.0,
    ) -> None:
        self.client = client
        self.entity_labels = tuple(entity_labels)
        self.max_points = max_points  # per series; Prometheus itself refuses more than 11,000
        self.min_step = min_step  # None: the scrape interval (finer steps only repeat samples)
        # Bound on the signals of one entity: the conventions (at most 22, `CONVENTIONS`) and the most
        # relevant rest.
        self.max_signals = max_signals
        self.max_queries = max_queries
        # Prometheus's (and the kube-prometheus stack's) default scrape interval, until one is measured.
        self.scrape_interval = scrape_interval
        self.queries = 0
        self._metadata: dict[str, MetricType] | None = None
        self._pods: dict[str, list[str]] = {}
        self._signals: dict[tuple[str, float, float], list[Signal]] = {}
        self._records: dict[tuple[str, float, float], bool] = {}
        self._matrices: dict[tuple[str, float, float, float], list[dict[str, Any]]] = {}
        self._measured_scrape = False

    # --- requests, within the budget ---

    def _get(self, path: str, params: dict[str, Any], what: str) -> Any:
        if self.queries >= self.max_queries:
            raise self.client.error(
                f"the query budget of {self.max_queries} queries per investigation is spent"
            )
        self.queries += 1
        return status_data(self.client, self.client.get_json(path, params), what)

    def step_for(self, window: TimeWindow) -> float:
        """Resolution for `window`: at most `max_points` points, never finer than `min_step` (by default
        the scrape interval, once measured)."""
        floor = self.min_step if self.min_step is not None else self.scrape_interval
        return max(floor, math.ceil(window.seconds / self.max_points))

    def rate_window(self, step: float) -> str:
        """The range of `rate()` at `step`: Grafana's `$__rate_interval`, max(step + scrape, 4 scrapes)."""
        return f"{math.ceil(max(step + self.scrape_interval, 4 * self.scrape_interval))}s"

    # --- what the entity is ---

    def metadata(self) -> dict[str, MetricType]:
        """Metric types by family name, from `/api/v1/metadata` (fetched once)."""
        if self._metadata is None:
            data = self._get("/api/v1/metadata", {}, "metadata")
            with self.client.parsing("metadata"):
                found: dict[str, MetricType] = {}
                for name, entries in as_dict(data or {}, "data").items():
                    for entry in as_list(entries, f"metadata of {name}"):
                        try:
                            found[str(name)] = MetricType(as_str(as_dict(entry, name).get("type"), "type"))
                        except ValueError:
                            continue  # a type this reader does not know (e.g. gaugehistogram): by name
                        break
                self._metadata = found
        return self._metadata

    def pods(self, entity: str, window: TimeWindow) -> list[str]:
        """The pods of `entity` by kube-state-metrics: those its workload owns (pod -> ReplicaSet ->
        Deployment, or pod -> StatefulSet / DaemonSet / Job) and those whose labels name it as a service
        (`kube_pod_labels{label_app=...}`, for each service label: a Service selects its pods by label,
        and one service may run as several Deployments, such as `cart-v1` and `cart-v2` of a canary
        release); empty when it has none."""
        if entity not in self._pods:
            span = {"start": f"{window.start:.3f}", "end": f"{window.end:.3f}"}
            owner = quote(entity)
            labelled = [f"kube_pod_labels{{label_{k}={owner}}}" for k in self.entity_labels if k != "job"]
            rows = self._series(
                [
                    f"kube_replicaset_owner{{owner_name={owner}}}",
                    f"kube_pod_owner{{owner_name={owner}}}",
                    *labelled,
                ],
                span,
            )
            pods = {
                r["pod"]
                for r in rows
                if r.get("__name__") in ("kube_pod_owner", "kube_pod_labels") and r.get("pod")
            }
            sets = sorted(
                {
                    r["replicaset"]
                    for r in rows
                    if r.get("__name__") == "kube_replicaset_owner" and r.get("replicaset")
                }
            )
            if sets:
                matcher = "|".join(regex_literal(s) for s in sets)
                owned = self._series(
                    [f'kube_pod_owner{{owner_kind="ReplicaSet", owner_name=~{quote(matcher)}}}'], span
                )
                pods |= {r["pod"] for r in owned if r.get("pod")}
            self._pods[entity] = sorted(pods)
        return self._pods[entity]

    def _series(self, matches: list[str], span: dict[str, str]) -> list[dict[str, str]]:
        data = self._get("/api/v1/series", {"match[]": matches, **span}, "series")
        with self.client.parsing("series"):
            return [
                {str(k): str(v) for k, v in as_dict(row, "series[]").items()} for row in as_list(data, "data")
            ]

    def entity_matchers(self, entity: str, window: TimeWindow) -> list[str]:
        """The label matchers that select `entity`'s series, one alternative each (they cannot be OR-ed
        inside one selector): each service label, then its pods (containers belong to their pod)."""
        out = []
        for label in self.entity_labels:
            if label == "job":  # job is `name` or `namespace/name`
                out.append(f"job=~{quote('(.+/)?' + regex_literal(entity))}")
            else:
                out.append(f"{label}={quote(entity)}")
        pods = self.pods(entity, window)
        pattern = "|".join(regex_literal(p) for p in pods) if pods else pod_name_pattern(entity)
        out.append(f"pod=~{quote(pattern)}")
        return out

    def entity_selectors(self, entity: str, window: TimeWindow, extra: str = "") -> list[str]:
        """One series selector per entity matcher, each with `extra` matchers."""
        return [
            "{" + ", ".join(m for m in (extra, matcher) if m) + "}"
            for matcher in self.entity_matchers(entity, window)
        ]

    # --- discovery ---

    def metric_names(self, entity: str, window: TimeWindow) -> list[str]:
        """The names of `entity`'s signals inside `window`, most relevant first."""
        return [s.name for s in self.signals(entity, window)]

    def signals(self, entity: str, window: TimeWindow) -> list[Signal]:
        """`entity`'s signals: the conventions it has series of first, then the rest by type (bounded)."""
        key = (entity, window.start, window.end)
        if key not in self._signals:
            data = self._get(
                "/api/v1/label/__name__/values",
                {
                    "match[]": [
                        *self.entity_selectors(entity, window),
                        *("{" + m + "}" for m in own_matchers(entity)),
                    ],
                    "start": f"{window.start:.3f}",
                    "end": f"{window.end:.3f}",
                },
                "label values",
            )
            with self.client.parsing("label values"):
                names = {as_str(n, "metric name") for n in as_list(data, "data")}
            found = signals_for(names, self.metadata() if names else {})
            # A failed share whose failures no entity ever reported is unmeasured, not 0 (see `records`).
            found = [s for s in found if not s.failures or self.records(s.failures, window)]
            if found and not self._measured_scrape:
                self._measure_scrape(found[0], entity, window)
            self._signals[key] = found[: self.max_signals]
        return self._signals[key]

    def records(self, selector: str, window: TimeWindow) -> bool:
        """Whether the store holds any series of `selector` (of any entity) inside `window`, asked once per
        selector and window. Exporters create a failure series with the first failure (the service graph
        connector's `failed_total`, a 5xx status code's), so a service without one has not failed, but
        only where failures are recorded at all: a store with no failure series anywhere, while every
        share of failures would read 0, may have no failure counting (an exporter without it, data
        imported without failures), and its zeros would clear every entity unmeasured."""
        key = (selector, window.start, window.end)
        if key not in self._records:
            query = f"group(present_over_time({selector}[{max(window.seconds, 1.0):.0f}s]))"
            self._records[key] = bool(self._vector(query, window.end, "failure series"))
        return self._records[key]

    def _measure_scrape(self, signal: Signal, entity: str, window: TimeWindow) -> None:
        """The scrape interval (rate windows need it), from how many samples a series holds over the probe
        range: first the entity's own targets' `up`, which Prometheus writes at every scrape, failed or
        not; else the densest of the entity's series of `signal` (one with holes, or that began inside
        the range, reads sparser: a TrainTicket replay's series with missing minutes read 75-133 s for
        its 60 s scrape, and its minute rates were taken over two minutes)."""
        self._measured_scrape = True
        matchers = self.entity_matchers(entity, window)
        for source, selectors in (("up", matchers), (signal.source, selectors_of(signal, matchers, entity))):
            probe = " or ".join(f"count_over_time({source}{{{sel}}}[{SCRAPE_PROBE:g}s])" for sel in selectors)
            for _, count in self._vector(f"max({probe})", window.end, "scrape interval"):
                if count >= 4:
                    # whole seconds, as scrape configs give them (the range holds a partial interval)
                    self.scrape_interval = float(max(1, round(SCRAPE_PROBE / count)))
                    return

    def service_graph(self, window: TimeWindow) -> list[tuple[str, str, float]]:
        """Caller -> callee edges from the OpenTelemetry Collector's service graph connector: the requests
        `traces_service_graph_request_total{client, server}` counted inside `window`."""
        query = f"sum by (client, server) (increase({SERVICE_GRAPH}[{max(window.seconds, 1.0):.0f}s]))"
        edges = [
            (labels.get("client", ""), labels.get("server", ""), calls)
            for labels, calls in self._vector(query, window.end, "service graph")
        ]
        return sorted(e for e in edges if e[0] and e[1] and e[2] > 0)

    def span_coverage(self, window: TimeWindow, step: float) -> list[tuple[float, str]]:
        """When the span metrics connector counted spans inside `window`: (end of a `step`, service) for
        every step in which it counted any of that service's. Spans may be kept for some stretches only
        (a sampled or interrupted pipeline); a step without any is a hole, not a quiet service."""
        query = f"sum by (service_name) (increase({SPAN_CALLS}[{step:.0f}s])) > 0"
        items = self._matrix(query, window, step)
        with self.client.parsing("span coverage"):
            return [
                (as_number(as_list(point, "point")[0], "time"), service)
                for item in items
                if (service := item["metric"].get("service_name", ""))
                for point in item["values"]
            ]

    def operation_durations(self, window: TimeWindow) -> list[OperationDurations]:
        """Per operation (`service_name`, `span_name`), the spans that ended inside `window` and their
        median duration, from the span metrics connector's counter and histogram (the median known to
        the bucket it falls in)."""
        reach = f"[{max(window.seconds, 1.0):.0f}s]"
        counts = self._vector(
            f"sum by ({OPERATION}) (increase({SPAN_CALLS}{reach}))", window.end, "span counts"
        )
        medians = self._vector(
            f"histogram_quantile(0.5, sum by ({OPERATION}, le) (increase({SPAN_DURATION}_bucket{reach})))",
            window.end,
            "span durations",
        )

        spans = {(lb.get("service_name", ""), lb.get("span_name", "")): n for lb, n in counts}
        out = []
        for labels, median_ms in medians:
            service, name = labels.get("service_name", ""), labels.get("span_name", "")
            if service and (service, name) in spans and math.isfinite(median_ms):
                out.append(OperationDurations(service, name, spans[service, name], median_ms / 1000.0))
        return out

    def services(self, window: TimeWindow, beside: Iterable[str]) -> list[str]:
        """The services running beside `beside` (in the namespaces their pods run in) inside `window`, as
        kube-state-metrics lists pods: each pod's service label (`kube_pod_labels`, each service label in
        order), else its workload (pod -> ReplicaSet -> Deployment, or its StatefulSet, DaemonSet or Job).
        A call graph names only the services that called or were called in its window; a service nobody
        called still has resources that can deviate, and a rival's deviation is evidence too."""
        span = {"start": f"{window.start:.3f}", "end": f"{window.end:.3f}"}
        rows = self._series(["kube_pod_labels", "kube_pod_owner", "kube_replicaset_owner"], span)
        deployments = {
            r["replicaset"]: r.get("owner_name", "")
            for r in rows
            if r.get("__name__") == "kube_replicaset_owner" and r.get("replicaset")
        }
        labelled = {
            (r.get("namespace", ""), r["pod"]): service
            for r in rows
            if r.get("__name__") == "kube_pod_labels" and r.get("pod") and (service := self._service_label(r))
        }
        owned = {
            (r.get("namespace", ""), r["pod"]): (
                deployment_of(r["owner_name"], deployments)
                if r.get("owner_kind") == "ReplicaSet"
                else r["owner_name"]
            )
            for r in rows
            if r.get("__name__") == "kube_pod_owner" and r.get("pod") and r.get("owner_name")
        }
        served = {**owned, **labelled}  # (namespace, pod) -> service: its label over its workload
        wanted = set(beside)
        namespaces = {namespace for (namespace, _), service in served.items() if service in wanted}
        return sorted({service for (namespace, _), service in served.items() if namespace in namespaces})

    def _vector(self, query: str, at: float, what: str) -> list[tuple[dict[str, str], float]]:
        """An instant query's result: each series' labels and value."""
        data = self._get("/api/v1/query", {"query": query, "time": f"{at:.3f}"}, what)
        with self.client.parsing(what):
            out = []
            for item in as_list(as_dict(data, "data").get("result"), "result"):
                labels = as_dict(as_dict(item, "series").get("metric"), "metric")
                value = as_number(as_list(as_dict(item, "series").get("value"), "value")[1], "value")
                out.append(({str(k): str(v) for k, v in labels.items()}, value))
            return out

    def newest_scrape(self, at: float) -> float | None:
        """When Prometheus last scraped a target, as of `at`: the newest of its own `up` samples within
        the lookback delta (None when it holds none, e.g. data only remote-written to it)."""
        found = self._vector("max(timestamp(up))", at, "newest scrape")
        return found[0][1] if found else None

    # --- rollouts (kube-state-metrics) ---

    def has_rollouts(self, window: TimeWindow) -> bool:
        """Whether Prometheus holds kube-state-metrics' ReplicaSet creation times (a change history)."""
        query = f"count(last_over_time({REPLICASET_CREATED}[{max(window.seconds, 1.0):.0f}s]))"
        return any(value > 0 for _, value in self._vector(query, window.end, "rollouts"))

    def rollouts(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        """The rollouts inside `window` as kube-state-metrics records them: a Deployment's rollout creates
        a ReplicaSet, so each ReplicaSet created inside it (`kube_replicaset_created`, a Unix time) is a
        DEPLOY event of the service its labels name (`kube_replicaset_labels`, its pod template's), else
        that its pods serve (their service label, `kube_pod_labels`), else of its Deployment
        (`kube_replicaset_owner`, or the name less its pod-template hash). The reference is the
        ReplicaSet, whose name its pods' names carry."""
        span = f"[{max(window.seconds, 1.0):.0f}s]"
        created = {
            (labels.get("namespace", ""), labels["replicaset"]): value
            for labels, value in self._vector(
                f"max by (namespace, replicaset) (last_over_time({REPLICASET_CREATED}{span}))",
                window.end,
                "rollouts",
            )
            if "replicaset" in labels and window.contains(value)
        }
        if not created:
            return []
        sets = quote("|".join(regex_literal(rs) for _, rs in created))
        owners = {
            labels.get("replicaset", ""): labels.get("owner_name", "")
            for labels, _ in self._vector(
                f"last_over_time(kube_replicaset_owner{{replicaset=~{sets}}}{span})", window.end, "rollouts"
            )
        }
        pods = {
            labels.get("pod", ""): labels.get("owner_name", "")
            for labels, _ in self._vector(
                f'last_over_time(kube_pod_owner{{owner_kind="ReplicaSet", owner_name=~{sets}}}{span})',
                window.end,
                "rollouts",
            )
        }
        served: dict[str, set[str]] = {}
        # A ReplicaSet's own labels (its pod template's) name its service even before any pod of it runs.
        for labels, _ in self._vector(
            f"last_over_time(kube_replicaset_labels{{replicaset=~{sets}}}{span})", window.end, "rollouts"
        ):
            service = self._service_label(labels)
            if service and labels.get("replicaset"):
                served.setdefault(labels["replicaset"], set()).add(service)
        labelled = set(served)
        if pods:
            matcher = quote("|".join(regex_literal(p) for p in pods))
            for labels, _ in self._vector(
                f"last_over_time(kube_pod_labels{{pod=~{matcher}}}{span})", window.end, "rollouts"
            ):
                service = self._service_label(labels)
                rs = pods.get(labels.get("pod", ""))
                if service and rs and rs not in labelled:
                    served.setdefault(rs, set()).add(service)
        events = []
        for (namespace, rs), at in sorted(created.items(), key=lambda kv: (kv[1], kv[0])):
            workload = deployment_of(rs, owners)
            services = sorted(served.get(rs, ())) or [workload]
            for service in services:
                if entity is None or service == entity:
                    events.append(
                        Event(
                            time=at,
                            entity=service,
                            kind=EventKind.DEPLOY,
                            message=f"{service}: ReplicaSet {rs} of {workload} created (a rollout)",
                            reference=rs,
                            attributes={
                                "phase": "start",
                                "namespace": namespace,
                                "source": "kube-state-metrics",
                            },
                        )
                    )
        return events

    def _service_label(self, labels: Mapping[str, str]) -> str | None:
        """The service a Kubernetes object's labels (`label_<name>`, as kube-state-metrics writes them)
        name: the first service label it carries."""
        return next((labels[f"label_{k}"] for k in self.entity_labels if f"label_{k}" in labels), None)

    # --- the alert's condition ---

    def condition_since(self, expr: str, labels: Mapping[str, str], at: float) -> float | None:
        """When the alert's condition (its rule's expression) began to hold without a break up to `at`:
        Prometheus's `activeAt`, which it does not send to Alertmanager (`startsAt` is when the alert fired,
        the rule's `for:` and an evaluation later). Only the expression's series that carry the alert's own
        label values count. None when the condition does not hold at `at` (within two evaluations)."""
        window = TimeWindow(at - CONDITION_LOOKBACK, at)
        step = max(EVALUATION_INTERVAL, math.ceil(window.seconds / self.max_points))
        held: set[float] = set()
        items = self._matrix(expr, window, step)
        with self.client.parsing("query_range"):
            for series in items:
                own = {k: v for k, v in series["metric"].items() if k != "__name__"}
                if all(labels.get(k) == v for k, v in own.items()):
                    held.update(as_number(as_list(p, "values[]")[0], "sample time") for p in series["values"])
        times = sorted(held, reverse=True)
        if not times or times[0] < at - 2 * step:
            return None
        since = times[0]
        for earlier in times[1:]:
            if since - earlier > 1.5 * step:
                break
            since = earlier
        return since

    # --- series ---

    def query_range(
        self, query: str, window: TimeWindow, step: float | None = None, entity: str | None = None
    ) -> list[MetricSeries]:
        """Run a PromQL range query; each matrix series becomes a MetricSeries.

        `entity`, when given, names every series (the caller selected them by it); otherwise the
        entity comes from the series labels (service_name / service / job / pod).
        """
        items = self._matrix(query, window, step or self.step_for(window))
        with self.client.parsing("query_range"):
            return [self._matrix_series(item, window, entity) for item in items]

    def _signals_matrix(self, query: str, window: TimeWindow, step: float) -> list[dict[str, Any]]:
        """`_matrix` of an entity's signals, asked once per window and step: an investigation reads a
        suspect's signals when it seeds and again in its loop (2.5 times per entity on a TrainTicket
        replay), and one reading keeps its findings consistent with each other."""
        key = (query, window.start, window.end, step)
        if key not in self._matrices:
            self._matrices[key] = self._matrix(query, window, step)
        return self._matrices[key]

    def _matrix(self, query: str, window: TimeWindow, step: float) -> list[dict[str, Any]]:
        """The result of a range query: its series (`metric` labels as strings, `values` as sent)."""
        data = self._get(
            "/api/v1/query_range",
            {"query": query, "start": f"{window.start:.3f}", "end": f"{window.end:.3f}", "step": f"{step:g}"},
            "query_range",
        )
        with self.client.parsing("query_range"):
            data = as_dict(data, "data")
            if data.get("resultType") != "matrix":
                raise ShapeError(f"resultType is {data.get('resultType')!r}, expected 'matrix'")
            out = []
            for item in as_list(data.get("result"), "data.result"):
                item = as_dict(item, "result[]")
                labels = {str(k): str(v) for k, v in as_dict(item.get("metric", {}), "metric").items()}
                out.append({"metric": labels, "values": as_list(item.get("values"), "values")})
            return out

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        """`entity`'s signals in `window`, one query for all: the named ones, or every one it has.

        A name that is no signal of the entity (a raw metric, such as the alert's own) is read by its type.
        """
        known = self.signals(entity, window)
        wanted = None if names is None else set(names)
        if wanted is None:
            chosen = known
        else:
            by_name = {s.name: s for s in known}
            # an edge series is read through its signal, which gives every edge of the entity
            signal_of = {n: split_edge_name(n)[0] for n in wanted}
            chosen = [by_name[n] for n in sorted(set(signal_of.values()) & set(by_name))]
            raw = sorted(n for n, base in signal_of.items() if base == n and n not in by_name)
            metadata = self.metadata() if raw else {}
            for name in raw:
                chosen.extend(derived(name, metric_type(name, metadata)))
        if not chosen:
            return []
        step = self.step_for(window)
        rate = self.rate_window(step)
        matchers = self.entity_matchers(entity, window)
        # At the scrape interval, the rate of each interval (see `signals`); coarser, the step's average.
        per = "irate" if step <= self.scrape_interval else "rate"
        query = " or ".join(
            [
                *(render(s, matchers, rate, entity, per) for s in chosen),
                *(render_bounds(s, matchers, entity) for s in chosen if s.buckets),
            ]
        )
        units = {s.name: s.unit for s in chosen}
        series: list[MetricSeries] = []
        bounds: dict[str, set[float]] = {}
        with self.client.parsing("query_range"):
            for item in self._signals_matrix(query, window, step):
                of = item["metric"].get(BOUNDS_LABEL)
                if of is None:
                    series.append(self._matrix_series(item, window, entity))
                else:
                    bounds.setdefault(of, set()).add(as_number(item["metric"].get("le"), "le"))
        series = [
            replace(
                s,
                unit=units.get(split_edge_name(s.name)[0], s.unit),
                resolution=bucket_widths(s.values, bounds[s.name]) if s.name in bounds else None,
            )
            for s in series
            if wanted is None or _asked(s.name, wanted)
        ]
        return sorted(series, key=lambda s: (s.name, s.instance or ""))

    def _matrix_series(self, item: dict[str, Any], window: TimeWindow, entity: str | None) -> MetricSeries:
        labels = item["metric"]
        found, instance = entity_from_labels(labels, self.entity_labels)
        name = labels.get(SIGNAL_LABEL) or labels.get("__name__", "")
        points = item["values"]
        timestamps = np.empty(len(points), dtype=np.float64)
        values = np.empty(len(points), dtype=np.float64)
        for i, point in enumerate(points):
            pair = as_list(point, "values[]")
            if len(pair) != 2:
                raise ShapeError(f"values[]: expected [time, value], got {pair!r:.60}")
            timestamps[i] = as_number(pair[0], "sample time")
            values[i] = as_number(pair[1], "sample value")  # strings; "NaN" and "+Inf" included
        # Prometheus' end is inclusive, the model's windows are closed-open.
        keep = timestamps < window.end
        return MetricSeries(
            entity=entity or found or "unknown",
            name=name,
            unit=unit_from_name(name),
            timestamps=timestamps[keep],
            values=values[keep],
            instance=instance,
        )
