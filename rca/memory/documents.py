"""The incident document: what incident memory stores about one concluded incident, and the text it embeds.

A document is built from the relational rows (the source of truth), so memory can always be rebuilt from
the database. It carries only what a later investigation or a search page needs: the symptom, the
services involved, the concluded root cause and fault kind (empty when the gate found no confident root
cause), the action tier, the exit, a few key evidence summaries and the onset time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rca.incidents.models import Incident, Investigation

# Key evidence kept per document: the embedded text must stay within the model's 256 tokens, and the
# first few supporting summaries carry the story.
MAX_EVIDENCE = 5
SUPPORTS = "supports"
CONFIDENT = "confident"


@dataclass(frozen=True)
class IncidentDocument:
    """One incident as incident memory stores it (the Qdrant payload, plus the embedded text)."""

    incident_id: int
    title: str
    symptom_entity: str
    services: tuple[str, ...]
    root_cause_entity: str
    fault_kind: str
    tier: str
    exit: str
    evidence: tuple[str, ...]
    onset: datetime
    investigation_id: int | None = None

    @property
    def confident(self) -> bool:
        """Whether the investigation proved a root cause (only those seed recall priors)."""
        return self.exit == CONFIDENT and bool(self.root_cause_entity)

    def text(self) -> str:
        """The text that is embedded: the most telling parts first, since long texts are truncated."""
        parts = [self.title.strip().rstrip(".")]
        if self.symptom_entity:
            parts.append(f"Symptom in {self.symptom_entity}")
        if self.root_cause_entity:
            kind = _words(self.fault_kind) or "fault"
            parts.append(f"Root cause: {kind} in {self.root_cause_entity}")
        elif self.exit:
            parts.append("No confident root cause")
        if self.services:
            parts.append("Services involved: " + ", ".join(self.services))
        parts.extend(s.strip().rstrip(".") for s in self.evidence)
        return ". ".join(p for p in parts if p) + "."

    def payload(self) -> dict[str, Any]:
        """The Qdrant payload (schema in `rca.memory.index`)."""
        onset = _aware(self.onset)
        return {
            "incident_id": self.incident_id,
            "investigation_id": self.investigation_id,
            "title": self.title,
            "symptom_entity": self.symptom_entity,
            "services": list(self.services),
            "root_cause_entity": self.root_cause_entity,
            "fault_kind": self.fault_kind,
            "tier": self.tier,
            "exit": self.exit,
            "evidence": list(self.evidence),
            "onset": onset.isoformat(),
            "onset_ts": onset.timestamp(),
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> IncidentDocument:
        """The document back from a stored payload."""
        inv = payload.get("investigation_id")
        return cls(
            incident_id=int(payload["incident_id"]),
            investigation_id=int(inv) if inv is not None else None,
            title=str(payload.get("title", "")),
            symptom_entity=str(payload.get("symptom_entity", "")),
            services=tuple(str(s) for s in payload.get("services", ())),
            root_cause_entity=str(payload.get("root_cause_entity", "")),
            fault_kind=str(payload.get("fault_kind", "")),
            tier=str(payload.get("tier", "")),
            exit=str(payload.get("exit", "")),
            evidence=tuple(str(s) for s in payload.get("evidence", ())),
            onset=datetime.fromtimestamp(float(payload["onset_ts"]), tz=UTC),
        )


def document_for(incident: Incident, investigation: Investigation | None = None) -> IncidentDocument:
    """The document for `incident` as concluded by `investigation` (symptom-only without one)."""
    symptom = incident.symptom_entity
    if investigation is None:
        return IncidentDocument(
            incident_id=int(incident.pk),
            title=incident.title,
            symptom_entity=symptom,
            services=(symptom,) if symptom else (),
            root_cause_entity="",
            fault_kind="",
            tier="",
            exit="",
            evidence=(),
            onset=incident.onset,
        )
    root = investigation.root_cause_entity
    path = investigation.propagation_path if isinstance(investigation.propagation_path, list) else []
    chain = investigation.evidence_chain
    # The chain is stored either as the conclusion's dict ({"path", "evidence", ...}) or as its list.
    chain_items = chain.get("evidence", []) if isinstance(chain, dict) else chain
    chain_path = chain.get("path", []) if isinstance(chain, dict) else []
    citation = chain.get("citation") if isinstance(chain, dict) else None

    services = _unique(
        [root, *(_hop_entities(path)), *(str(e) for e in chain_path), symptom],
    )
    return IncidentDocument(
        incident_id=int(incident.pk),
        investigation_id=int(investigation.pk),
        title=incident.title,
        symptom_entity=symptom,
        services=tuple(services),
        root_cause_entity=root,
        fault_kind=investigation.root_cause_kind,
        tier=investigation.tier,
        exit=investigation.exit,
        evidence=tuple(_key_evidence(investigation, chain_items, path, citation)),
        onset=incident.onset,
    )


def _key_evidence(
    investigation: Investigation, chain: Iterable[Any], path: list[Any], citation: Any
) -> list[str]:
    """Up to MAX_EVIDENCE lines: the cited change, the chain's supporting items, the path's, then the
    supporting evidence rows (the root cause's hypotheses first)."""

    def from_chain() -> Iterator[str]:
        if isinstance(citation, dict) and citation.get("title"):
            kind = citation.get("kind") or "change"
            yield f"Cited {kind} {citation.get('ref', '')}: {citation['title']}".replace("  ", " ")
        for item in chain:
            if isinstance(item, str):
                yield item
            elif isinstance(item, dict) and item.get("verdict", SUPPORTS) == SUPPORTS:
                yield str(item.get("summary", ""))
        for hop in path:
            if isinstance(hop, dict):
                yield from (str(s) for s in hop.get("evidence", ()))

    picked = _unique(from_chain(), limit=MAX_EVIDENCE)
    if len(picked) < MAX_EVIDENCE and investigation.pk is not None:
        from rca.incidents.models import Evidence

        rows = (
            Evidence.objects.filter(hypothesis__investigation=investigation, verdict=SUPPORTS)
            .order_by("hypothesis__rank", "seq")
            .values_list("hypothesis__entity", "summary")[: MAX_EVIDENCE * 4]
        )
        root = investigation.root_cause_entity
        ordered = sorted(rows, key=lambda r: r[0] != root)  # stable: rank order within each group
        picked = _unique([*picked, *(summary for _, summary in ordered)], limit=MAX_EVIDENCE)
    return picked


def _hop_entities(path: list[Any]) -> Iterator[str]:
    for hop in path:
        if isinstance(hop, dict):
            yield str(hop.get("cause", ""))
            yield str(hop.get("effect", ""))


def _unique(items: Iterable[str], limit: int | None = None) -> list[str]:
    """Non-empty, stripped, first occurrence kept, in order."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        s = item.strip()
        if s and s not in seen:
            seen.add(s)
            out.append(s)
            if limit is not None and len(out) >= limit:
                break
    return out


def _words(kind: str) -> str:
    """`cpu_saturation` -> `cpu saturation`: the embedder reads words, not identifiers."""
    return kind.replace("_", " ").replace("-", " ").strip()


def _aware(dt: datetime) -> datetime:
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)
