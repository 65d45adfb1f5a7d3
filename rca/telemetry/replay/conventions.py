"""Recorded metric series written under the conventions a real Kubernetes cluster's Prometheus holds.

The recorded loaders name every series in one shared vocabulary (`cpu`, `memory`, `latency_p99`,
`success_rate{caller=..,callee=..}`, ...); this module maps that vocabulary, never a dataset, onto:

- cAdvisor (the kubelet's `/metrics/cadvisor`): `container_cpu_usage_seconds_total`,
  `container_memory_working_set_bytes`, `container_network_{receive,transmit}_bytes_total`;
- kube-state-metrics: `kube_pod_owner`, `kube_replicaset_owner`, `kube_pod_labels`,
  `kube_pod_container_resource_limits`, `kube_pod_container_status_restarts_total`, and the case's
  change history as the ReplicaSets its rollouts created, `kube_replicaset_created` (`write_rollouts`);
- OpenTelemetry HTTP semantic conventions: `http_server_request_duration_seconds` and
  `http_client_request_duration_seconds` histograms with `service_name`, `http_response_status_code`;
- the OpenTelemetry Collector service graph connector for service-level call edges:
  `traces_service_graph_request_total`, `..._failed_total`, `..._server_seconds`, `..._client_seconds`.

`docs/live-conventions.md` holds the table (recorded name -> series, labels, how the value is made); the
constants below are its source. Counters are built by integrating the recorded rates over each scrape
interval; latency histograms by `histograms.bucket_shares`.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rca.telemetry.model import Event, EventKind, MetricSeries, split_edge_name
from rca.telemetry.replay.histograms import COLLECTOR_BOUNDS_SECONDS, HTTP_DURATION_BOUNDS, bucket_shares
from rca.telemetry.replay.openmetrics import Exposition, Family, FloatArray, Kind

# --- families -------------------------------------------------------------------------------------
CPU_USAGE = Family(
    "container_cpu_usage_seconds", Kind.COUNTER, "Cumulative cpu time consumed in seconds.", "seconds"
)
MEMORY_WORKING_SET = Family(
    "container_memory_working_set_bytes", Kind.GAUGE, "Current working set in bytes.", "bytes"
)
NETWORK_RECEIVE = Family(
    "container_network_receive_bytes", Kind.COUNTER, "Cumulative count of bytes received.", "bytes"
)
NETWORK_TRANSMIT = Family(
    "container_network_transmit_bytes", Kind.COUNTER, "Cumulative count of bytes transmitted.", "bytes"
)
POD_OWNER = Family("kube_pod_owner", Kind.GAUGE, "Information about the Pod's owner.")
REPLICASET_OWNER = Family("kube_replicaset_owner", Kind.GAUGE, "Information about the ReplicaSet's owner.")
POD_LABELS = Family("kube_pod_labels", Kind.GAUGE, "Kubernetes labels converted to Prometheus labels.")
# A ReplicaSet's labels are its pod template's, the service label among them: they name its service also
# when none of its pods has telemetry (a rollout that began as the recording ended).
REPLICASET_LABELS = Family(
    "kube_replicaset_labels", Kind.GAUGE, "Kubernetes labels converted to Prometheus labels."
)
# What Prometheus itself writes for every scrape target at every scrape.
SCRAPE_UP = Family("up", Kind.GAUGE, "1 if the target was scraped successfully, 0 if not")
REPLICASET_CREATED = Family("kube_replicaset_created", Kind.GAUGE, "Unix creation timestamp")
RESOURCE_LIMITS = Family(
    "kube_pod_container_resource_limits",
    Kind.GAUGE,
    "The number of requested limit resource by a container.",
)
RESTARTS = Family(
    "kube_pod_container_status_restarts",
    Kind.COUNTER,
    "The number of container restarts per container.",
)
HTTP_SERVER = Family(
    "http_server_request_duration_seconds",
    Kind.HISTOGRAM,
    "Duration of HTTP server requests.",
    "seconds",
    HTTP_DURATION_BOUNDS,
)
HTTP_CLIENT = Family(
    "http_client_request_duration_seconds",
    Kind.HISTOGRAM,
    "Duration of HTTP client requests.",
    "seconds",
    HTTP_DURATION_BOUNDS,
)
GRAPH_REQUESTS = Family(
    "traces_service_graph_request", Kind.COUNTER, "Total count of requests between two nodes."
)
GRAPH_FAILED = Family(
    "traces_service_graph_request_failed", Kind.COUNTER, "Total count of failed requests between two nodes."
)
GRAPH_SERVER = Family(
    "traces_service_graph_request_server_seconds",
    Kind.HISTOGRAM,
    "Time for a request between two nodes as seen from the server.",
    "seconds",
    COLLECTOR_BOUNDS_SECONDS,
)
GRAPH_CLIENT = Family(
    "traces_service_graph_request_client_seconds",
    Kind.HISTOGRAM,
    "Time for a request between two nodes as seen from the client.",
    "seconds",
    COLLECTOR_BOUNDS_SECONDS,
)

# Scrape jobs as kube-prometheus names them.
CADVISOR_JOB = {"job": "kubelet", "metrics_path": "/metrics/cadvisor"}
KSM_JOB = {"job": "kube-state-metrics"}
INTERFACE = "eth0"  # a pod's network interface as cAdvisor labels it

# Where a recording gives a percentage but no absolute amount, the amount is written against this
# nominal limit, and the limit series with it, so that usage / limit is the recorded percentage.
NOMINAL_CPU_CORES = 1.0
NOMINAL_MEMORY_BYTES = float(2**30)
# Where a recording gives latencies or success ratios but no request volume, requests are counted at
# this nominal rate (per second): ratios and quantiles come out exact, the volume says nothing.
NOMINAL_RATE = 1.0
OK_STATUS, ERROR_STATUS = "200", "500"

# --- the recorded vocabulary ----------------------------------------------------------------------
_QUANTILE = re.compile(r"^(?P<client>client_)?latency_p(?P<pct>\d{2})$")
CONTAINER_NAMES = (
    "cpu_millicores",
    "cpu",
    "memory",
    "memory_utilization",
    "network_rx_bytes",
    "network_tx_bytes",
)
REQUEST_NAMES = ("requests", "success_rate", "client_success_rate", "latency_mean", "latency")
# Recorded names with no counterpart among the conventions, and why they are not written.
NOT_REPLAYED: dict[str, str] = {
    "syscall_read": "no cAdvisor or kube-state-metrics series counts system calls (an eBPF exporter would)",
    "syscall_write": "no cAdvisor or kube-state-metrics series counts system calls (an eBPF exporter would)",
    "node_": "node-exporter measures of the pod's node; the recording does not say which node it is",
}


def replayed(base: str) -> bool:
    """Whether the replay writes a recorded base name (`split_edge_name`'s first part) somewhere."""
    return base in CONTAINER_NAMES or base in REQUEST_NAMES or _QUANTILE.match(base) is not None


def not_replayed_reason(base: str) -> str | None:
    """Why a recorded base name is not written (None when it is written, or is unknown)."""
    for prefix, reason in NOT_REPLAYED.items():
        if base == prefix or (prefix.endswith("_") and base.startswith(prefix)):
            return reason
    return None


# --- placed series --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Placed:
    """A recorded series on the replay's scrape grid (times already shifted and snapped)."""

    entity: str
    name: str
    unit: str
    instance: str | None
    times: FloatArray
    values: FloatArray

    def frame(self) -> pd.Series:
        """Values indexed by time; the last value wins where two points snapped to one time."""
        s = pd.Series(self.values, index=self.times)
        return s[~s.index.duplicated(keep="last")]


def combine(
    parts: Iterable[tuple[MetricSeries, float]], snap: Callable[[FloatArray], FloatArray]
) -> list[Placed]:
    """(series, shift) pairs of every recording as placed series: the same entity, name and instance
    of several recordings (a separate normal recording and the case) joined into one."""
    grouped: dict[tuple[str, str, str | None], list[tuple[FloatArray, FloatArray, str]]] = defaultdict(list)
    for s, shift in parts:
        grouped[(s.entity, s.name, s.instance)].append((s.timestamps + shift, s.values, s.unit))
    out = []
    for (entity, name, instance), chunks in grouped.items():
        times = np.concatenate([c[0] for c in chunks])
        values = np.concatenate([c[1] for c in chunks])
        order = np.argsort(times, kind="stable")
        snapped = snap(times[order])
        out.append(Placed(entity, name, chunks[0][2], instance, snapped, values[order]))
    return out


# --- pods and workloads ---------------------------------------------------------------------------
_K8S_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the characters Kubernetes uses for generated names


def _generated(seed: str, length: int) -> str:
    digest = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
    chars = []
    for _ in range(length):
        digest, i = divmod(digest, len(_K8S_ALPHABET))
        chars.append(_K8S_ALPHABET[i])
    return "".join(chars)


@dataclass(frozen=True)
class Pod:
    """A pod of a Deployment: its name, ReplicaSet and Deployment (Kubernetes' naming convention)."""

    name: str
    replicaset: str | None
    deployment: str | None

    @classmethod
    def of(cls, namespace: str, service: str, instance: str | None) -> Pod:
        """The recorded pod, or (when the recording names none) one named by the Deployment convention
        `<service>-<10 chars>-<5 chars>`, the characters derived from the namespace and service."""
        if instance is None:
            rs = f"{service}-{_generated(f'{namespace}/{service}/replicaset', 10)}"
            return cls(f"{rs}-{_generated(f'{namespace}/{service}/pod', 5)}", rs, service)
        parts = instance.rsplit("-", 2)
        if len(parts) < 3:
            return cls(instance, None, None)
        rs = f"{parts[0]}-{parts[1]}"
        return cls(instance, rs, parts[0])


# --- request measures ------------------------------------------------------------------------------
@dataclass
class Measure:
    """Request measures of one (entity, instance, side, peer) on one time axis."""

    entity: str
    instance: str | None
    side: str  # "server": requests the entity served; "client": calls it made
    peer: str | None  # the other end of a call edge
    columns: dict[str, pd.Series] = field(default_factory=dict)  # field -> values by time
    sources: dict[str, str] = field(default_factory=dict)  # field -> the recorded base name
    count_unit: bool = False  # `requests` is a count per scrape interval, not a rate

    def frame(self) -> pd.DataFrame:
        """All fields aligned on the union of their times."""
        return pd.concat(self.columns, axis=1).sort_index() if self.columns else pd.DataFrame()

    @property
    def quantile_fields(self) -> dict[float, str]:
        """Probability -> column for the recorded latency quantiles."""
        return {int(k[1:]) / 100.0: k for k in self.columns if re.fullmatch(r"p\d{2}", k)}

    @property
    def has_latency(self) -> bool:
        """Whether any latency quantile or mean was recorded."""
        return bool(self.quantile_fields) or "mean" in self.columns


def _measure_key(
    base: str, entity: str, caller: str | None, callee: str | None
) -> tuple[str, str | None, str]:
    """(side, peer, field) of a recorded request name."""
    q = _QUANTILE.match(base)
    client_named = base.startswith("client_")
    fld = (
        f"p{q['pct']}"
        if q
        else {
            "requests": "rate",
            "success_rate": "ok",
            "client_success_rate": "ok",
            "latency_mean": "mean",
            "latency": "mean",
        }[base]
    )
    if caller is not None and callee is not None:
        side = "server" if entity == callee and not client_named else "client"
        return side, caller if side == "server" else callee, fld
    return ("client" if client_named else "server"), None, fld


def measures(series: Iterable[Placed]) -> list[Measure]:
    """Group the request-shaped series into measures."""
    out: dict[tuple[str, str | None, str, str | None], Measure] = {}
    for s in series:
        base, caller, callee = split_edge_name(s.name)
        if not (base in REQUEST_NAMES or _QUANTILE.match(base)):
            continue
        side, peer, fld = _measure_key(base, s.entity, caller, callee)
        m = out.setdefault((s.entity, s.instance, side, peer), Measure(s.entity, s.instance, side, peer))
        values = s.frame()
        if fld == "ok":
            values = (values / 100.0).clip(0.0, 1.0)
        if fld == "rate" and s.unit == "count":
            m.count_unit = True
        m.columns[fld] = values
        m.sources[fld] = base
    return sorted(out.values(), key=lambda m: (m.entity, m.instance or "", m.side, m.peer or ""))


@dataclass(frozen=True)
class Traffic:
    """Per scrape time of a measure: requests (count per interval), success share, latency shares."""

    times: FloatArray
    count: FloatArray
    ok: FloatArray
    shares: FloatArray | None  # (T, buckets + 1) or None without latency
    mean: FloatArray | None
    has_errors: bool


def traffic(m: Measure, bounds: tuple[float, ...], step: float, rate: pd.Series | None = None) -> Traffic:
    """What `m` says per scrape interval; `rate` stands in when `m` has no request rate of its own."""
    frame = m.frame()
    times = frame.index.to_numpy(dtype=np.float64)
    if "rate" in frame:
        per_second = frame["rate"].to_numpy(dtype=np.float64) / (step if m.count_unit else 1.0)
    elif rate is not None:
        per_second = rate.reindex(frame.index).to_numpy(dtype=np.float64)
    else:
        per_second = np.full(times.shape, NOMINAL_RATE)
    count = np.clip(per_second, 0.0, None) * step
    ok = frame["ok"].ffill().fillna(1.0).to_numpy(dtype=np.float64) if "ok" in frame else np.ones(times.shape)
    shares = mean = None
    if m.has_latency:
        quantiles = {p: frame[c].to_numpy(dtype=np.float64) for p, c in m.quantile_fields.items()}
        recorded_mean = frame["mean"].to_numpy(dtype=np.float64) if "mean" in frame else None
        shares, mean = bucket_shares(bounds, quantiles, recorded_mean)
    return Traffic(times, count, ok, shares, mean, bool(np.any(ok < 1.0)))


def write_histogram(
    expo: Exposition, family: Family, labels: Mapping[str, str], t: Traffic, *, status_label: str | None
) -> bool:
    """Add a measure's requests to a latency histogram, split by status code when `status_label`;
    False (nothing written) when the measure has no latency."""
    if t.shares is None or t.mean is None:
        return False
    split = [(OK_STATUS, t.ok), (ERROR_STATUS, 1.0 - t.ok)] if status_label else [("", np.ones_like(t.ok))]
    for code, share in split:
        if code == ERROR_STATUS and not t.has_errors:
            continue
        n = t.count * share
        extra = {status_label: code} if status_label else {}
        expo.add_histogram(family, {**labels, **extra}, t.times, t.shares * n[:, None], n * t.mean)
    return True


@dataclass
class Edge:
    """A service-level call edge and what each side recorded about it."""

    client: str
    server: str
    client_side: Measure | None = None
    server_side: Measure | None = None


# --- the writer --------------------------------------------------------------------------------------
@dataclass
class ClusterWriter:
    """Writes one case's placed metric series into an exposition under the cluster conventions."""

    expo: Exposition
    namespace: str
    step: float
    written: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # recorded -> families
    skipped: dict[str, str] = field(default_factory=dict)  # recorded base name -> reason

    def write(self, series: list[Placed]) -> None:
        """Containers, pods and request measures of every entity."""
        by_pod: dict[tuple[str, str | None], list[Placed]] = defaultdict(list)
        for s in series:
            base, _, _ = split_edge_name(s.name)
            if base in CONTAINER_NAMES:
                by_pod[(s.entity, s.instance)].append(s)
            elif not replayed(base):
                self.skipped[base] = not_replayed_reason(base) or "no convention for this name"
        pod_times: dict[tuple[str, str | None], list[FloatArray]] = defaultdict(list)
        for (entity, instance), parts in sorted(by_pod.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            pod_times[(entity, instance)].append(self._container(entity, instance, parts))
        found = measures(series)
        for m in found:
            if m.instance is not None:
                pod_times[(m.entity, m.instance)].append(m.frame().index.to_numpy(dtype=np.float64))
        self._requests(found)
        self._pods(pod_times)

    # containers -----------------------------------------------------------------------------------
    def _pod_labels(self, entity: str, instance: str | None) -> dict[str, str]:
        return {"namespace": self.namespace, "pod": Pod.of(self.namespace, entity, instance).name}

    def _container(self, entity: str, instance: str | None, parts: list[Placed]) -> FloatArray:
        named = {p.name: p.frame() for p in parts}
        pod = self._pod_labels(entity, instance)
        container = {**pod, "container": entity}
        times = np.unique(np.concatenate([p.times for p in parts]))
        cores = named.get("cpu_millicores")
        pct = named.get("cpu")
        if cores is not None:
            usage = cores / 1000.0
            self._counter(CPU_USAGE, {**CADVISOR_JOB, **container}, usage, "cpu_millicores")
            if pct is not None:
                self._limit(container, "cpu", "core", usage, pct, "cpu")
        elif pct is not None:
            self._counter(CPU_USAGE, {**CADVISOR_JOB, **container}, pct / 100.0 * NOMINAL_CPU_CORES, "cpu")
            self._constant_limit(container, "cpu", "core", NOMINAL_CPU_CORES, pct, "cpu")
        memory = named.get("memory")
        mem_pct = named.get("memory_utilization")
        if memory is not None:
            self._gauge(MEMORY_WORKING_SET, {**CADVISOR_JOB, **container}, memory, "memory")
            if mem_pct is not None:
                self._limit(container, "memory", "byte", memory, mem_pct, "memory_utilization")
        elif mem_pct is not None:
            working_set = mem_pct / 100.0 * NOMINAL_MEMORY_BYTES
            self._gauge(MEMORY_WORKING_SET, {**CADVISOR_JOB, **container}, working_set, "memory_utilization")
            self._constant_limit(
                container, "memory", "byte", NOMINAL_MEMORY_BYTES, mem_pct, "memory_utilization"
            )
        for recorded, family in (
            ("network_rx_bytes", NETWORK_RECEIVE),
            ("network_tx_bytes", NETWORK_TRANSMIT),
        ):
            if recorded in named:
                labels = {**CADVISOR_JOB, **pod, "interface": INTERFACE}
                self._counter(family, labels, named[recorded], recorded)
        return np.asarray(times, dtype=np.float64)

    def _counter(self, family: Family, labels: Mapping[str, str], rate: pd.Series, recorded: str) -> None:
        """A counter growing by `rate` (per second) over each scrape interval."""
        self.expo.add(
            family, labels, rate.index.to_numpy(dtype=np.float64), rate.to_numpy(dtype=np.float64) * self.step
        )
        self.written[recorded].add(family.name + "_total")

    def _gauge(self, family: Family, labels: Mapping[str, str], values: pd.Series, recorded: str) -> None:
        self.expo.add(
            family, labels, values.index.to_numpy(dtype=np.float64), values.to_numpy(dtype=np.float64)
        )
        self.written[recorded].add(family.name)

    def _limit(
        self,
        container: Mapping[str, str],
        resource: str,
        unit: str,
        usage: pd.Series,
        pct: pd.Series,
        recorded: str,
    ) -> None:
        """The limit that makes usage / limit the recorded percentage (its median over the recording)."""
        ratio = (usage / (pct / 100.0)).replace([np.inf, -np.inf], np.nan).dropna()
        if ratio.empty:
            return
        limit = float(ratio.median())
        self._constant_limit(container, resource, unit, limit, pct, recorded)

    def _constant_limit(
        self,
        container: Mapping[str, str],
        resource: str,
        unit: str,
        limit: float,
        at: pd.Series,
        recorded: str,
    ) -> None:
        labels = {**KSM_JOB, **container, "resource": resource, "unit": unit}
        self._gauge(RESOURCE_LIMITS, labels, pd.Series(limit, index=at.index), recorded)

    # pods ---------------------------------------------------------------------------------------------
    def _pods(self, pod_times: Mapping[tuple[str, str | None], list[FloatArray]]) -> None:
        """kube-state-metrics series of every pod, over the times it has data."""
        rs_times: dict[tuple[str, str, str], list[FloatArray]] = defaultdict(list)
        for (entity, instance), chunks in sorted(
            pod_times.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")
        ):
            times = np.unique(np.concatenate(chunks))
            pod = Pod.of(self.namespace, entity, instance)
            base = {**KSM_JOB, "namespace": self.namespace, "pod": pod.name}
            ones, zeros = np.ones(times.shape), np.zeros(times.shape)
            self.expo.add(POD_LABELS, {**base, "label_app": entity}, times, ones)
            self.expo.add(RESTARTS, {**base, "container": entity}, times, zeros)
            if pod.replicaset is not None and pod.deployment is not None:
                owner = {
                    "owner_kind": "ReplicaSet",
                    "owner_name": pod.replicaset,
                    "owner_is_controller": "true",
                }
                self.expo.add(POD_OWNER, {**base, **owner}, times, ones)
                rs_times[(pod.replicaset, pod.deployment, entity)].append(times)
        for (rs, deployment, entity), chunks in sorted(rs_times.items()):
            times = np.unique(np.concatenate(chunks))
            of_rs = {**KSM_JOB, "namespace": self.namespace, "replicaset": rs}
            owner = {"owner_kind": "Deployment", "owner_name": deployment, "owner_is_controller": "true"}
            self.expo.add(REPLICASET_OWNER, {**of_rs, **owner}, times, np.ones(times.shape))
            self.expo.add(REPLICASET_LABELS, {**of_rs, "label_app": entity}, times, np.ones(times.shape))

    # requests -------------------------------------------------------------------------------------------
    def _otel(self, entity: str, instance: str | None) -> dict[str, str]:
        """Labels of an OpenTelemetry SDK's metric as Prometheus receives it (job / instance from the
        resource; the k8sattributes processor's pod attributes)."""
        labels = {"job": entity, "service_name": entity}
        if instance is not None:
            pod = Pod.of(self.namespace, entity, instance).name
            labels |= {"instance": pod, "k8s_namespace_name": self.namespace, "k8s_pod_name": pod}
        return labels

    def _requests(self, found: list[Measure]) -> None:
        service_level = {
            m.entity for m in found if m.instance is None and m.side == "server" and m.peer is None
        }
        pod_rates: dict[str, list[pd.Series]] = defaultdict(list)
        for m in found:
            if m.instance is not None and m.side == "server" and m.peer is None and "rate" in m.columns:
                pod_rates[m.entity].append(m.columns["rate"])
        edges: dict[tuple[str, str], Edge] = {}
        for m in found:
            if m.peer is not None and m.instance is None:
                client, server = (m.peer, m.entity) if m.side == "server" else (m.entity, m.peer)
                edge = edges.setdefault((client, server), Edge(client, server))
                if m.side == "server":
                    edge.server_side = m
                else:
                    edge.client_side = m
                continue
            if m.side == "server" and m.instance is not None and m.entity in service_level:
                continue  # the entity's service-level measure stands for its requests (pods give its rate)
            rate = None
            if m.instance is None and m.entity in pod_rates:
                rate = pd.concat(pod_rates[m.entity], axis=1).sum(axis=1, min_count=1)
            t = traffic(m, HTTP_DURATION_BOUNDS, self.step, rate)
            family = HTTP_SERVER if m.side == "server" else HTTP_CLIENT
            labels = self._otel(m.entity, m.instance)
            if m.side == "client" and m.peer is not None:
                labels["server_address"] = m.peer
            if write_histogram(self.expo, family, labels, t, status_label="http_response_status_code"):
                self._note(m, family, m.sources)
                if rate is not None:
                    self.written["requests"].add(family.name)
        for edge in edges.values():
            self._edge(edge)

    def _edge(self, edge: Edge) -> None:
        labels = {"client": edge.client, "server": edge.server}
        counted = edge.server_side if edge.server_side is not None else edge.client_side
        assert counted is not None
        t = traffic(counted, COLLECTOR_BOUNDS_SECONDS, self.step)
        self.expo.add(GRAPH_REQUESTS, labels, t.times, t.count)
        self._note(counted, GRAPH_REQUESTS, ("rate",))
        with_ok = [m for m in (edge.server_side, edge.client_side) if m is not None and "ok" in m.columns]
        if with_ok:
            failed = traffic(with_ok[0], COLLECTOR_BOUNDS_SECONDS, self.step)
            self.expo.add(GRAPH_FAILED, labels, failed.times, failed.count * (1.0 - failed.ok))
            self._note(with_ok[0], GRAPH_FAILED, ("ok",))
        for side, family in ((edge.server_side, GRAPH_SERVER), (edge.client_side, GRAPH_CLIENT)):
            if side is None:
                continue
            t = traffic(side, COLLECTOR_BOUNDS_SECONDS, self.step)
            if write_histogram(self.expo, family, labels, t, status_label=None):
                self._note(side, family, [f for f in side.sources if f != "ok"])

    def _note(self, m: Measure, family: Family, fields: Iterable[str]) -> None:
        """Record which recorded names fed `family` (the manifest's mapping)."""
        suffix = "_total" if family.kind is Kind.COUNTER else ""
        for fld in fields:
            if fld in m.sources:
                self.written[m.sources[fld]].add(family.name + suffix)


# --- change history ------------------------------------------------------------------------------------
def rollout_replicasets(namespace: str, events: Iterable[Event]) -> dict[str, tuple[str, float]]:
    """The ReplicaSet each rollout of the change history created, with its service and when it began
    (recorded time).

    A Deployment's rollout is a new ReplicaSet, named `<deployment>-<pod-template-hash>`: the one of the
    pods the rollout's events name, else `<entity>-<reference>` (the recorded version id). A rollout that
    names neither has no ReplicaSet to write."""
    starts: dict[tuple[str, str | None], float] = {}
    named: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for e in events:
        if e.kind is not EventKind.DEPLOY:
            continue
        key = (e.entity, e.reference)
        starts[key] = min(starts.get(key, e.time), e.time)
        if e.instance:
            named[key].add(e.instance)
    out: dict[str, tuple[str, float]] = {}
    for (entity, reference), start in sorted(starts.items(), key=lambda kv: (kv[1], kv[0][0])):
        sets = {Pod.of(namespace, entity, pod).replicaset for pod in named[(entity, reference)]}
        sets.discard(None)
        names = sorted(s for s in sets if s) or ([f"{entity}-{reference}"] if reference else [])
        for name in names:
            out[name] = (entity, min(out.get(name, (entity, start))[1], start))
    return out


def write_rollouts(
    expo: Exposition,
    namespace: str,
    events: Iterable[Event],
    shift: float,
    grid: Callable[[float], FloatArray],
) -> int:
    """kube-state-metrics' `kube_replicaset_created` (its creation time, as a Unix time) and
    `kube_replicaset_labels` (its service's label) of every ReplicaSet the case's rollouts created, moved
    by `shift`, on the scrape grid from its creation on (`grid(start)`); returns how many. A ReplicaSet
    older than the recording is not written: the recording does not say when it was created."""
    written = 0
    for name, (entity, start) in rollout_replicasets(namespace, events).items():
        at = grid(start + shift)
        if at.size:  # nothing is written after the replayed present
            labels = {**KSM_JOB, "namespace": namespace, "replicaset": name}
            expo.add(REPLICASET_CREATED, labels, at, np.full(at.shape, float(round(start + shift))))
            expo.add(REPLICASET_LABELS, {**labels, "label_app": entity}, at, np.ones(at.shape))
            written += 1
    return written


def write_scrape_health(expo: Exposition, grid: Callable[[float], FloatArray]) -> int:
    """Prometheus's own `up` of every scrape job the exposition holds, on the scrape grid from the job's
    first sample to the replayed present (`grid(start)`): 1 where the job's series have a sample, 0 where
    the scrape found none. A live investigation reads where the data ends from it (the newest scrape), as
    on a real cluster; returns how many jobs."""
    jobs = expo.sample_times("job")
    for job, times in jobs.items():
        at = grid(float(times[0]))
        scraped = np.isin(np.round(at * 1000), np.round(times * 1000))  # in milliseconds, as written
        expo.add(SCRAPE_UP, {"job": job}, at, scraped.astype(np.float64))
    return len(jobs)
