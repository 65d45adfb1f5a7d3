"""A call graph from the Kubernetes API alone: Services' selectors and the workloads that name them.

A Service selects the pods of the workloads whose pod template carries every label of its selector; a
workload calls a Service when one of its containers names it, by the cluster DNS name its clients use
(`name`, `name.namespace`, `name.namespace.svc`, `name.namespace.svc.cluster.local`, with or without a
scheme and a port), in an environment value or an argument. That is how the usual manifests wire services
together (Online Boutique's `CART_SERVICE_ADDR: "cartservice:7070"`, an `--upstream=http://api:8080`
flag); an address held in a ConfigMap or built in code is not seen. So each edge is caller workload ->
every workload the named Service selects, and an entity is a workload's name (as events name them).

Hand-written: the Kubernetes client libraries return these objects but offer no reference analysis, and
the two rules (selector subset, DNS name match) are a few lines each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rca.integrations.parsing import as_dict, as_list, opt_str

# The workload kinds whose pod template a Service selects, and where each is listed.
WORKLOAD_PATHS = {
    "deployments": "/apis/apps/v1/namespaces/{ns}/deployments",
    "statefulsets": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "daemonsets": "/apis/apps/v1/namespaces/{ns}/daemonsets",
}
CLUSTER_DOMAIN = "cluster.local"  # the kubelet's default `clusterDomain`


@dataclass(frozen=True, slots=True)
class Service:
    """A Service with a selector (one without selects no pods: an external name or manual endpoints)."""

    namespace: str
    name: str
    selector: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Workload:
    """A workload's pod template labels and the text its containers are configured with."""

    namespace: str
    name: str
    labels: Mapping[str, str]
    configured: tuple[str, ...]  # environment values, commands and arguments of every container


def _strings(raw: Any, what: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_dict(raw or {}, what).items()}


def service_of(item: Any, namespace: str) -> Service | None:
    """A Service of a ServiceList; None when it has no selector."""
    item = as_dict(item, "service")
    meta = as_dict(item.get("metadata") or {}, "metadata")
    selector = _strings(as_dict(item.get("spec") or {}, "spec").get("selector"), "selector")
    name = opt_str(meta.get("name"))
    if not selector or not name:
        return None
    return Service(opt_str(meta.get("namespace")) or namespace, name, selector)


def workload_of(item: Any, namespace: str) -> Workload:
    """A Deployment, StatefulSet or DaemonSet of its list: pod template labels and container settings."""
    item = as_dict(item, "workload")
    meta = as_dict(item.get("metadata") or {}, "metadata")
    template = as_dict(as_dict(item.get("spec") or {}, "spec").get("template") or {}, "template")
    pod_meta = as_dict(template.get("metadata") or {}, "template.metadata")
    pod_spec = as_dict(template.get("spec") or {}, "template.spec")
    configured: list[str] = []
    for key in ("initContainers", "containers"):
        for container in as_list(pod_spec.get(key) or [], key):
            container = as_dict(container, "container")
            for env in as_list(container.get("env") or [], "env"):
                value = opt_str(as_dict(env, "env[]").get("value"))
                if value:
                    configured.append(value)
            for field in ("command", "args"):
                configured.extend(str(a) for a in as_list(container.get(field) or [], field))
    name = opt_str(meta.get("name"))
    if not name:
        raise ValueError("a workload without metadata.name")
    return Workload(
        opt_str(meta.get("namespace")) or namespace,
        name,
        _strings(pod_meta.get("labels"), "template labels"),
        tuple(configured),
    )


def _address(service: Service, short: bool) -> re.Pattern[str]:
    """The DNS names of `service` as a host in a text: the fully qualified ones always, the bare name only
    from its own namespace (the pod's DNS search path), never as part of a longer name."""
    name, ns = re.escape(service.name), re.escape(service.namespace)
    qualified = rf"{name}\.{ns}(?:\.svc(?:\.{re.escape(CLUSTER_DOMAIN)})?)?"
    host = rf"(?:{qualified}|{name})" if short else qualified
    return re.compile(rf"(?<![-\w.]){host}(?![-\w.])")


def selects(service: Service, workload: Workload) -> bool:
    """Whether `service`'s selector matches `workload`'s pods (every selector label on the template)."""
    return service.namespace == workload.namespace and all(
        workload.labels.get(k) == v for k, v in service.selector.items()
    )


def service_edges(services: Iterable[Service], workloads: Iterable[Workload]) -> list[tuple[str, str, float]]:
    """Caller -> callee workload edges (weight 1): see the module docstring."""
    every = list(workloads)
    edges: set[tuple[str, str]] = set()
    for service in services:
        callees = [w.name for w in every if selects(service, w)]
        if not callees:
            continue
        for caller in every:
            pattern = _address(service, short=caller.namespace == service.namespace)
            if any(pattern.search(text) for text in caller.configured):
                edges.update((caller.name, callee) for callee in callees if callee != caller.name)
    return [(caller, callee, 1.0) for caller, callee in sorted(edges)]
