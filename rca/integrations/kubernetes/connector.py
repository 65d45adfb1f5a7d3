"""Kubernetes connector: namespace events (core/v1 or events.k8s.io/v1) to model Events, and a call graph
from Services' selectors (`rca.integrations.kubernetes.topology`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rca.integrations.http import HttpClient
from rca.integrations.kubernetes.topology import (
    WORKLOAD_PATHS,
    Service,
    Workload,
    service_edges,
    service_of,
    workload_of,
)
from rca.integrations.otel import service_from_object
from rca.integrations.parsing import as_dict, as_int, as_list, opt_str, parse_rfc3339
from rca.telemetry.model import Event, EventKind, TimeWindow

CORE_API = "v1"
EVENTS_API = "events.k8s.io/v1"
_PATHS = {
    CORE_API: "/api/v1/namespaces/{ns}/events",
    EVENTS_API: "/apis/events.k8s.io/v1/namespaces/{ns}/events",
}
_REPLICA_SET = re.compile(r"replica set (\S+)")
_WARNING_REASONS = frozenset({"BackOff", "OOMKilling", "Unhealthy", "Evicted", "NodeNotReady"})


@dataclass(frozen=True, slots=True)
class K8sEvent:
    """The fields of either Event shape that matter here, normalised."""

    namespace: str
    reason: str
    type: str
    message: str
    kind: str  # involvedObject / regarding kind
    name: str
    first_seen: float
    last_seen: float
    count: int
    reporter: str


def _time(*candidates: Any) -> float | None:
    for value in candidates:
        if isinstance(value, str) and value:
            return parse_rfc3339(value, "event time")
    return None


def normalise_event(item: Any, namespace: str) -> K8sEvent | None:
    """Either Event shape (core/v1 `involvedObject`/`message`, events.k8s.io/v1 `regarding`/`note`).

    Returns None for an event that carries no time at all (nothing to place it on a timeline).
    """
    item = as_dict(item, "event")
    meta = as_dict(item.get("metadata") or {}, "metadata")
    obj = as_dict(item.get("regarding") or item.get("involvedObject") or {}, "involvedObject")
    series = as_dict(item.get("series") or {}, "series")
    first = _time(
        item.get("firstTimestamp"),
        item.get("deprecatedFirstTimestamp"),
        item.get("eventTime"),
        meta.get("creationTimestamp"),
    )
    if first is None:
        return None
    last = _time(
        series.get("lastObservedTime"),
        item.get("lastTimestamp"),
        item.get("deprecatedLastTimestamp"),
        item.get("eventTime"),
    )
    count = series.get("count") or item.get("count") or item.get("deprecatedCount") or 1
    source = as_dict(item.get("source") or item.get("deprecatedSource") or {}, "source")
    return K8sEvent(
        namespace=opt_str(obj.get("namespace")) or opt_str(meta.get("namespace")) or namespace,
        reason=opt_str(item.get("reason")) or "",
        type=opt_str(item.get("type")) or "Normal",
        message=opt_str(item.get("note")) or opt_str(item.get("message")) or "",
        kind=opt_str(obj.get("kind")) or "",
        name=opt_str(obj.get("name")) or "",
        first_seen=first,
        last_seen=max(first, last if last is not None else first),
        count=as_int(count, "count"),
        reporter=opt_str(item.get("reportingController"))
        or opt_str(item.get("reportingComponent"))
        or opt_str(source.get("component"))
        or "",
    )


def classify(event: K8sEvent, rollout: bool) -> EventKind:
    """The EventKind of a Kubernetes event.

    ScalingReplicaSet is DEPLOY when it is part of a rollout (the deployment moved between
    replica sets), else SCALE; Killing and "Back-off restarting failed container" are pod
    restarts; known failure reasons, any Failed* reason and any Warning are K8S_WARNING.
    """
    if event.reason == "ScalingReplicaSet":
        return EventKind.DEPLOY if rollout else EventKind.SCALE
    if event.reason == "Killing" or (event.reason == "BackOff" and "restarting" in event.message.lower()):
        return EventKind.POD_RESTART
    if event.reason in _WARNING_REASONS or event.reason.startswith("Failed") or event.type == "Warning":
        return EventKind.K8S_WARNING
    return EventKind.K8S_NORMAL


def rollout_deployments(events: Sequence[K8sEvent]) -> set[tuple[str, str]]:
    """(namespace, deployment) pairs whose ScalingReplicaSet events name two or more replica sets.

    A plain scale resizes one replica set; a rollout scales a new one up and the old one down.
    """
    seen: dict[tuple[str, str], set[str]] = {}
    for event in events:
        if event.reason == "ScalingReplicaSet":
            match = _REPLICA_SET.search(event.message)
            if match:
                seen.setdefault((event.namespace, event.name), set()).add(match.group(1))
    return {key for key, sets in seen.items() if len(sets) >= 2}


def to_model(event: K8sEvent, window: TimeWindow, rollout: bool) -> Event:
    """A model Event; repeated events are timed at their first observation inside `window`."""
    # A repeating event (count > 1) that began before the window is still relevant while it
    # repeats inside it; its true first sighting is kept in the attributes.
    time = max(event.first_seen, window.start)
    return Event(
        time=time,
        entity=service_from_object(event.kind, event.name),
        kind=classify(event, rollout),
        message=f"{event.reason}: {event.message}" if event.reason else event.message,
        reference=None,
        instance=event.name if event.kind == "Pod" else None,
        attributes={
            "k8s.event.reason": event.reason,
            "k8s.event.type": event.type,
            "k8s.event.count": str(event.count),
            "k8s.object.kind": event.kind,
            "k8s.object.name": event.name,
            "k8s.namespace.name": event.namespace,
            "first_seen": f"{event.first_seen:.3f}",
            "last_seen": f"{event.last_seen:.3f}",
            "reporter": event.reporter,
        },
    )


class KubernetesConnector:
    """Events of the configured namespaces from the Kubernetes API server."""

    def __init__(
        self,
        client: HttpClient,
        *,
        namespaces: Sequence[str],
        api: str = EVENTS_API,
        page_size: int = 500,
        max_pages: int = 10,
    ) -> None:
        if api not in _PATHS:
            raise ValueError(f"unknown Kubernetes events API {api!r}; use {CORE_API!r} or {EVENTS_API!r}")
        if not namespaces:
            raise ValueError("at least one Kubernetes namespace is required")
        self.client = client
        self.namespaces = tuple(namespaces)
        self.api = api
        self.page_size = page_size
        # events expire after ~1 h and a namespace holds tens of workloads: a few pages cover either
        self.max_pages = max_pages

    def _items(self, path: str, what: str) -> list[Any]:
        """Every item of a list endpoint (bounded pages of `page_size`, followed by `continue`)."""
        items: list[Any] = []
        token: str | None = None
        for _ in range(self.max_pages):
            params = {"limit": str(self.page_size)}
            if token:
                params["continue"] = token
            body = self.client.get_json(path, params)
            with self.client.parsing(what):
                body = as_dict(body, what)
                items.extend(as_list(body.get("items"), "items"))
                token = opt_str(as_dict(body.get("metadata") or {}, "metadata").get("continue"))
            if not token:
                break
        return items

    def raw_events(self, namespace: str) -> list[K8sEvent]:
        """Every event of `namespace` the API still holds."""
        what = f"events of namespace {namespace}"
        items = self._items(_PATHS[self.api].format(ns=namespace), what)
        with self.client.parsing(what):
            return [e for e in (normalise_event(item, namespace) for item in items) if e is not None]

    def service_edges(self) -> list[tuple[str, str, float]]:
        """Caller -> callee workload edges of the configured namespaces: a workload calls the workloads a
        Service selects when its containers' environment or arguments name that Service (see `topology`)."""
        services: list[Service] = []
        workloads: list[Workload] = []
        for namespace in self.namespaces:
            what = f"services of namespace {namespace}"
            items = self._items(f"/api/v1/namespaces/{namespace}/services", what)
            with self.client.parsing(what):
                services.extend(s for s in (service_of(item, namespace) for item in items) if s is not None)
            for kind, path in WORKLOAD_PATHS.items():
                what = f"{kind} of namespace {namespace}"
                items = self._items(path.format(ns=namespace), what)
                with self.client.parsing(what):
                    workloads.extend(workload_of(item, namespace) for item in items)
        return service_edges(services, workloads)

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        """Events whose [first, last] observation overlaps `window` (about `entity` when given)."""
        out: list[Event] = []
        for namespace in self.namespaces:
            raw = self.raw_events(namespace)
            rollouts = rollout_deployments(raw)
            for event in raw:
                if event.first_seen >= window.end or event.last_seen < window.start:
                    continue
                model = to_model(event, window, (event.namespace, event.name) in rollouts)
                if entity is None or model.entity == entity:
                    out.append(model)
        return sorted(out, key=lambda e: (e.time, e.entity, e.message))
