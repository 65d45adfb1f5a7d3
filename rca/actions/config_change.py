"""The offline configuration-change proposal, for a conclusion that cites no change to revert.

A revert undoes a cited change. When the evidence cites none, the fault kind may still have a
configuration remedy in the service's manifest (`ROOTLINE_ACTIONS_MANIFEST_PATH`, read from the
repository's default branch):

* `cpu`: raise the CPU limit of the entity's container by `CPU_LIMIT_FACTOR` (and its request with
  it when the request equals the limit);
* `memory`: raise the memory limit likewise, by `MEMORY_LIMIT_FACTOR`;
* `latency`, `errors`, `pod_failure`: add `REPLICA_STEP` to the `replicas` of the entity's Deployment.

The manifest is parsed with PyYAML only to find the values; the edit is made in the text, at the exact
place of each value, so the diff touches only those lines and every comment, quote and indentation is
kept. Whatever cannot be proposed honestly (no manifest, no such workload or container, no value to
raise, a fault kind with no configuration remedy) is `NoPatch` with the reason: never a placeholder.
The proposal is a mitigation for a reviewer, never a fix of the root cause, and its note says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from rca.actions.diffs import Change, PatchError, modification
from rca.actions.revert import NoPatch
from rca.integrations.github.repository import GitHubRepo

# Doubling is one clear, reviewable step: a saturated container was at its limit, so a small raise
# (say 20%) may saturate again at once, while more than double commits capacity the evidence does not
# justify. Whole factors also keep every Kubernetes quantity exact in the unit it was written in.
CPU_LIMIT_FACTOR = 2
MEMORY_LIMIT_FACTOR = 2
# One more replica rather than doubling: from one replica it already doubles capacity and removes the
# single point of failure, and on a large Deployment doubling could exhaust the cluster; the reviewer
# can scale further.
REPLICA_STEP = 1
# Kinds whose pods come from `spec.template`: their container resources can be raised.
WORKLOAD_KINDS = ("Deployment", "StatefulSet")
# Only a Deployment's replicas are raised: a StatefulSet's replica is a new member of a stateful set
# (a database, a quorum), which is not a change to propose without knowing the software.
SCALABLE_KINDS = ("Deployment",)

Resource = Literal["cpu", "memory"]


@dataclass(frozen=True, slots=True)
class Remedy:
    """What a fault kind's configuration remedy changes, and why it may help."""

    resource: Resource | None  # None: the replica count
    rationale: str


REMEDIES: dict[str, Remedy] = {
    "cpu": Remedy(
        "cpu", "more CPU relieves the saturation and throttling while the cause of the demand is found"
    ),
    "memory": Remedy(
        "memory",
        "more memory gives headroom against out-of-memory kills while the cause of the growth is found",
    ),
    "latency": Remedy(None, "one more replica spreads the load, which may relieve the latency"),
    "errors": Remedy(
        None, "one more replica adds capacity and spare instances while the errors are diagnosed"
    ),
    "pod_failure": Remedy(None, "one more replica keeps the service serving while its pods fail"),
}
# Kinds with no configuration remedy, and why (anything else is a kind Rootline does not know).
NO_REMEDY: dict[str, str] = {
    "bad_deploy": "a bad deploy or configuration change is undone by reverting it, so there is nothing to "
    "propose without the change itself",
}

_RESOURCE_NAMES: dict[Resource, str] = {"cpu": "CPU", "memory": "memory"}


class ManifestError(ValueError):
    """The manifest offers no value the remedy could change; the message says why."""


# --- Kubernetes quantities ---------------------------------------------------------------------------

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|n|u|m|k|M|G|T|P|E)?"
)
_MULTIPLIERS: dict[str, Decimal] = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{
        s: Decimal(10) ** (3 * i) for i, s in enumerate(("n", "u", "m", "", "k", "M", "G", "T", "P", "E"), -3)
    },
}


@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes resource quantity (`500m`, `1.5`, `256Mi`, `1e3`), kept in the unit it was written in."""

    number: Decimal
    suffix: str

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Read a quantity; raises ManifestError when `text` is not one."""
        match = _QUANTITY.fullmatch(text.strip())
        if match is None:
            raise ManifestError(f"{text!r} is not a Kubernetes quantity")
        return cls(Decimal(match["number"]), match["suffix"] or "")

    @property
    def value(self) -> Decimal:
        """The amount in base units (cores, bytes): `1` and `1000m` are equal, so are `1Gi` and `1024Mi`."""
        suffix = self.suffix
        if suffix[:1] in ("e", "E") and len(suffix) > 1:
            return self.number * Decimal(10) ** int(suffix[1:])
        return self.number * _MULTIPLIERS[suffix]

    def times(self, factor: int) -> Quantity:
        """The quantity multiplied by a whole `factor`, in the same unit (`500m` x2 is `1000m`)."""
        return Quantity(self.number * factor, self.suffix)

    def __str__(self) -> str:
        number = self.number.normalize()
        # normalize() writes 1000 as 1E+3; fixed-point keeps the number as a person would write it.
        return f"{number:f}{self.suffix}"


# --- editing a manifest in place ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValueChange:
    """One value the edit changes: what it is, where (1-based line), and from what to what."""

    what: str
    line: int
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class ManifestEdit:
    """The edit of one workload in a manifest, and the manifest's text after it."""

    workload: str  # e.g. "Deployment adservice"
    container: str | None  # None for a replica change
    changes: tuple[ValueChange, ...]
    text: str


def _get(node: Node | None, key: str) -> Node | None:
    if not isinstance(node, MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, ScalarNode) and k.value == key and isinstance(v, Node):
            return v
    return None


def _trail(node: Node | None, *keys: str) -> list[Node]:
    """The nodes met following `keys` down from `node` (fewer than the keys when one is missing)."""
    met: list[Node] = []
    for key in keys:
        node = _get(node, key)
        if node is None:
            break
        met.append(node)
    return met


def _path(node: Node | None, *keys: str) -> Node | None:
    met = _trail(node, *keys)
    return met[-1] if len(met) == len(keys) else None


def _shared(document: Node) -> frozenset[int]:
    """The nodes of `document` reached more than once: an anchored node and its aliases are one node
    object, so editing it (or anything under it) would change every place that refers to it."""
    reached: dict[int, int] = {}
    stack = [document]
    while stack:
        node = stack.pop()
        reached[id(node)] = reached.get(id(node), 0) + 1
        if reached[id(node)] > 1:
            continue  # descend once: an alias repeats what is under it
        if isinstance(node, MappingNode):
            stack += [n for pair in node.value for n in pair]
        elif isinstance(node, SequenceNode):
            stack += node.value
    return frozenset(k for k, n in reached.items() if n > 1)


def _scalar(node: Node | None) -> str | None:
    return node.value if isinstance(node, ScalarNode) else None


@dataclass(frozen=True, slots=True)
class _Workload:
    kind: str
    name: str
    node: MappingNode
    shared: frozenset[int]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"

    def containers(self) -> list[tuple[str, MappingNode]]:
        found = _path(self.node, "spec", "template", "spec", "containers")
        items = found.value if isinstance(found, SequenceNode) else []
        return [(_scalar(_get(c, "name")) or "", c) for c in items if isinstance(c, MappingNode)]

    def aliased(self, *trail: Node) -> bool:
        """True when a node on `trail` is anchored and referred to elsewhere too."""
        return any(id(node) in self.shared for node in trail)


def _workloads(text: str) -> tuple[list[_Workload], list[str]]:
    """The workloads of a (multi-document) manifest, and a description of every document."""
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise ManifestError(f"it is not valid YAML ({' '.join(str(exc).split())})") from exc
    workloads: list[_Workload] = []
    seen: list[str] = []
    for doc in documents:
        kind, name = _scalar(_get(doc, "kind")), _scalar(_path(doc, "metadata", "name"))
        if kind is None or not isinstance(doc, MappingNode):
            continue
        seen.append(f"{kind} {name or '(unnamed)'}")
        if kind in WORKLOAD_KINDS and name:
            workloads.append(_Workload(kind, name, doc, _shared(doc)))
    return workloads, seen


def _find(text: str, entity: str, need_container: bool) -> tuple[_Workload, tuple[str, MappingNode] | None]:
    """The entity's workload (named after it, or holding a container named after it) and, when
    `need_container`, its container: the one named after the entity, or the only one."""
    workloads, seen = _workloads(text)
    named = [w for w in workloads if w.name == entity]
    if len(named) > 1:
        raise ManifestError(f"it holds {len(named)} workloads named {entity} ({', '.join(map(str, named))})")
    if named:
        workload = named[0]
        if not need_container:
            return workload, None
        containers = workload.containers()
        own = [c for c in containers if c[0] == entity]
        if own or len(containers) == 1:
            return workload, (own or containers)[0]
        if not containers:
            raise ManifestError(f"{workload} declares no containers")
        names = ", ".join(n or "(unnamed)" for n, _ in containers)
        raise ManifestError(
            f"{workload} has {len(containers)} containers ({names}) and none is named {entity}: "
            "which one to change is not guessed"
        )
    holding = [(w, c) for w in workloads for c in w.containers() if c[0] == entity]
    if len(holding) > 1:
        where = ", ".join(str(w) for w, _ in holding)
        raise ManifestError(f"a container named {entity} is in {len(holding)} workloads ({where})")
    if holding:
        workload, container = holding[0]
        return workload, (container if need_container else None)
    kinds = " or ".join(WORKLOAD_KINDS)
    held = f" (it holds {', '.join(seen)})" if seen else " (it holds no Kubernetes object)"
    raise ManifestError(f"it holds no {kinds} named {entity} nor one with a container named {entity}{held}")


def _render(node: ScalarNode, value: str) -> str:
    """`value` written as `node` was: plain, or in the same quotes."""
    return value if node.style is None else f"{node.style}{value}{node.style}"


def _span(text: str, node: ScalarNode, what: str) -> tuple[int, int]:
    """Where `node` is in `text`, checked to be the value as written on one line."""
    start, end = node.start_mark.index, node.end_mark.index
    if node.style not in (None, "'", '"') or text[start:end] != _render(node, node.value):
        raise ManifestError(
            f"the {what} ({node.value!r}) is not written as a one-line value that can be edited"
        )
    return start, end


_ALIASED = "is an alias of a value anchored elsewhere: editing it would change more than this workload"


def _replace(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def edit_manifest(text: str, entity: str, kind: str) -> ManifestEdit:
    """The configuration change fault `kind` of `entity` calls for, applied to manifest `text`.

    Raises ManifestError, saying what is missing, when the manifest offers nothing to change; and
    KeyError for a kind that has no remedy (see REMEDIES).
    """
    remedy = REMEDIES[kind]
    workload, container = _find(text, entity, need_container=remedy.resource is not None)
    if remedy.resource is None:
        return _scale(text, workload)
    assert container is not None
    return _raise_limit(text, workload, container, remedy.resource)


def _scale(text: str, workload: _Workload) -> ManifestEdit:
    if workload.kind not in SCALABLE_KINDS:
        raise ManifestError(
            f"{workload}: a replica added to a {workload.kind} is a new member of a stateful set, which "
            "is not proposed without knowing the software"
        )
    trail = _trail(workload.node, "spec", "replicas")
    node = trail[-1] if len(trail) == 2 else None
    if not isinstance(node, ScalarNode):
        raise ManifestError(
            f"{workload} sets no replicas (the default of 1 applies, or an autoscaler manages them), "
            "so there is no count to raise"
        )
    if workload.aliased(*trail):
        raise ManifestError(f"the replica count of {workload} {_ALIASED}")
    if node.tag != "tag:yaml.org,2002:int" or not re.fullmatch(r"[0-9]+", node.value) or int(node.value) < 1:
        raise ManifestError(f"the replicas of {workload} are {node.value!r}, not a positive count")
    start, end = _span(text, node, "replica count")
    new = str(int(node.value) + REPLICA_STEP)
    change = ValueChange("replicas", node.start_mark.line + 1, node.value, new)
    return ManifestEdit(str(workload), None, (change,), _replace(text, [(start, end, _render(node, new))]))


def _raise_limit(
    text: str, workload: _Workload, container: tuple[str, MappingNode], resource: Resource
) -> ManifestEdit:
    name, node = container
    label = _RESOURCE_NAMES[resource]
    where = f"container {name or '(unnamed)'} of {workload}"
    # Everything from the workload down to the value must be written once, or the edit would reach
    # whatever else refers to it.
    above = [*_trail(workload.node, "spec", "template", "spec", "containers"), node]
    trail = _trail(node, "resources", "limits", resource)
    limit = trail[-1] if len(trail) == 3 else None
    if not isinstance(limit, ScalarNode):
        raise ManifestError(f"the {where} sets no {label} limit, so there is no limit to raise")
    if workload.aliased(*above, *trail):
        raise ManifestError(f"the {label} limit of the {where} {_ALIASED}")
    old = Quantity.parse(limit.value)
    if old.value <= 0:
        raise ManifestError(f"the {label} limit of the {where} is {limit.value}, not a positive quantity")
    new = old.times(_factor(resource))
    changes = [ValueChange(f"{label} limit", limit.start_mark.line + 1, limit.value, str(new))]
    edits = [(*_span(text, limit, f"{label} limit"), _render(limit, str(new)))]
    requested = _trail(node, "resources", "requests", resource)
    request = requested[-1] if len(requested) == 3 and not workload.aliased(*above, *requested) else None
    # A request equal to its limit (the Guaranteed QoS class, or a deliberate reservation) is raised
    # with it, so the pod keeps its class; any other request is the owner's choice and left alone.
    held = _quantity(request) if isinstance(request, ScalarNode) else None
    if isinstance(request, ScalarNode) and held is not None and held.value == old.value:
        raised = str(held.times(_factor(resource)))  # in the request's own unit (`500m` beside `0.5`)
        changes.append(ValueChange(f"{label} request", request.start_mark.line + 1, request.value, raised))
        edits.append((*_span(text, request, f"{label} request"), _render(request, raised)))
    return ManifestEdit(str(workload), name or None, tuple(changes), _replace(text, edits))


def _quantity(node: ScalarNode) -> Quantity | None:
    try:
        return Quantity.parse(node.value)
    except ManifestError:
        return None


# --- the proposal --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigChange(Change):
    """A configuration change proposed against one manifest: the mitigation a fault kind calls for."""

    path: str
    branch: str
    blob: str  # the manifest's blob on `branch` the diff was computed against

    @property
    def message(self) -> str:
        """A commit message for the change."""
        return f"{self.title}\n\n{self.note}"


# A Kubernetes object name (RFC 1123 subdomain): what a workload or container can be called, and
# nothing that could lead the manifest path elsewhere (`/`, `..`).
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _no(reason: str) -> NoPatch:
    return NoPatch(f"the conclusion cites no change to revert, and {reason}")


def config_change_for(entity: str, kind: str, repo: GitHubRepo, manifest_path: str | None) -> ConfigChange:
    """The configuration change that fault `kind` of `entity` calls for in its manifest on the default
    branch; raises NoPatch with the reason when there is none to propose."""
    if not entity:
        raise _no("it names no root-cause entity whose configuration could change")
    remedy = REMEDIES.get(kind)
    if remedy is None:
        why = NO_REMEDY.get(kind, "Rootline knows no configuration remedy for it")
        raise _no(f"a {kind or 'unnamed'} fault has no configuration change to propose offline: {why}")
    if manifest_path is None:
        raise _no(
            f"no manifest is configured to propose a configuration change for {entity} in "
            "(set ROOTLINE_ACTIONS_MANIFEST_PATH, e.g. kubernetes-manifests/{service}.yaml)"
        )
    if repo.repo is None:
        raise _no(
            f"no GitHub repository is configured (GITHUB_REPOSITORY) to read the manifest of {entity} from"
        )
    if not _NAME.fullmatch(entity):
        raise _no(f"{entity!r} is not a Kubernetes object name, so it names no manifest or workload")
    try:
        path = manifest_path.format(service=entity)
    except (KeyError, IndexError, ValueError) as exc:
        raise _no(
            f"ROOTLINE_ACTIONS_MANIFEST_PATH={manifest_path!r} is not a path with {{service}} in it"
        ) from exc
    branch = repo.default_branch()
    found = repo.file(path, branch)
    if found is None:
        raise _no(f"{path} is not in {repo.repo} on {branch}")
    text, blob = found
    try:
        edit = edit_manifest(text, entity, kind)
        files = (modification(path, text, edit.text),)
    except (ManifestError, PatchError) as exc:
        raise _no(f"{path} on {branch} offers no change: {exc}") from exc
    note = _note(edit, entity, kind, path, branch)
    return ConfigChange(
        title=_title(edit, entity), files=files, note=note, path=path, branch=branch, blob=blob
    )


def _title(edit: ManifestEdit, entity: str) -> str:
    first = edit.changes[0]
    return f"{entity}: raise the {first.what} to {first.new} (mitigation proposed by Rootline)"


def _note(edit: ManifestEdit, entity: str, kind: str, path: str, branch: str) -> str:
    remedy = REMEDIES[kind]
    target = edit.workload if edit.container is None else f"container {edit.container} of {edit.workload}"
    step = f"+{REPLICA_STEP}" if remedy.resource is None else f"x{_factor(remedy.resource)}"
    first, *rest = edit.changes
    what = f"raises the {first.what} of {target} from {first.old} to {first.new} ({step})"
    for change in rest:
        what += (
            f", and its {change.what} with it, from {change.old} to {change.new}, as it equalled the limit"
        )
    return (
        f"Proposed configuration change to {path} (on {branch}): {what}. "
        f"Why: the conclusion names a {kind} fault of {entity} and cites no change to revert; "
        f"{remedy.rationale}. This is a mitigation to review, not a fix of the root cause."
    )


def _factor(resource: Resource) -> int:
    return CPU_LIMIT_FACTOR if resource == "cpu" else MEMORY_LIMIT_FACTOR
