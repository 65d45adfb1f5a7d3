"""Evidence chain, grounding strength and the confidence soft-cap."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

from rca.core.evidence import Evidence
from rca.core.hypotheses import HypothesisTree
from rca.core.modes import Mode

CAP_PARTIAL = 0.84  # just below the pull-request tier
CAP_UNGROUNDED = 0.64  # just below the patch tier
CITATION_WINDOW_BEFORE_S = 2 * 3600.0
CITATION_WINDOW_AFTER_S = 5 * 60.0

CitationKind = Literal["commit", "pr", "deploy", "config"]
_SHA = re.compile(r"[0-9a-f]{7,40}")
_PR_NUMBER = re.compile(r"#?[1-9]\d*")
# A deploy or config change recorded by the platform may be cited by its release or image id
# ("v2-fd6989b7c", "1.4.2", "sha256:..."): the platform recorded it, so nothing is guessed. It must
# hold a digit, so a bare word such as "latest" or "HEAD" never passes.
_RELEASE = re.compile(r"(?=[^\s]*\d)[a-z0-9][a-z0-9._:@/+-]{0,127}")


class Grounding(StrEnum):
    """How well a conclusion is anchored in hard evidence and a change citation."""

    GROUNDED = "grounded"
    PARTIALLY_GROUNDED = "partially_grounded"
    UNGROUNDED = "ungrounded"


@dataclass(frozen=True, slots=True)
class Citation:
    """A change that may have caused the incident: a commit, PR, deploy or config change.

    ``ref`` is a commit sha (7 to 40 hex digits), a PR's number, or for a deploy or config change the
    release id its platform recorded; ``at`` is unix seconds.
    """

    kind: CitationKind
    ref: str
    entity: str
    at: float
    title: str = ""

    @property
    def verifiable(self) -> bool:
        """True when ``ref`` is a real identifier: a PR number, a commit sha, or a release id."""
        ref = self.ref.strip().lower()
        if self.kind == "pr":
            return _PR_NUMBER.fullmatch(ref) is not None
        if _SHA.fullmatch(ref) is not None:
            return True
        return self.kind in ("deploy", "config") and _RELEASE.fullmatch(ref) is not None


def nearest_citation(
    changes: Iterable[Citation],
    onset: float,
    window_before_s: float = CITATION_WINDOW_BEFORE_S,
    window_after_s: float = CITATION_WINDOW_AFTER_S,
    entities: Iterable[str] = (),
) -> Citation | None:
    """The change nearest to ``onset`` inside ``[onset - before, onset + after]`` that touches one of
    ``entities`` and has a verifiable ref; None when there is none (never guessed).

    Changes at or before onset are preferred to later ones, which can rarely be a cause.
    """
    wanted = set(entities)
    candidates = [
        c
        for c in changes
        if c.entity in wanted and c.verifiable and onset - window_before_s <= c.at <= onset + window_after_s
    ]
    return min(candidates, key=lambda c: (c.at > onset, abs(c.at - onset), c.ref), default=None)


def derive_grounding(has_hard_evidence: bool, has_citation: bool) -> Grounding:
    """Both -> grounded; exactly one -> partially grounded; neither -> ungrounded."""
    if has_hard_evidence and has_citation:
        return Grounding.GROUNDED
    if has_hard_evidence or has_citation:
        return Grounding.PARTIALLY_GROUNDED
    return Grounding.UNGROUNDED


@dataclass(frozen=True, slots=True)
class EvidenceChain:
    """The auditable chain behind a conclusion."""

    entity: str | None
    path: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    citation: Citation | None
    subscores: Mapping[str, float] = field(hash=False)
    grounding: Grounding


def assemble_chain(
    tree: HypothesisTree | None,
    *,
    named_entity: str | None = None,
    path: Iterable[str] = (),
    changes: Iterable[Citation] = (),
    onset: float | None = None,
    subscores: Mapping[str, float] | None = None,
    window_before_s: float = CITATION_WINDOW_BEFORE_S,
    window_after_s: float = CITATION_WINDOW_AFTER_S,
) -> EvidenceChain:
    """Build the evidence chain for the winning suspect.

    The winner is ``named_entity`` (the suspect the conclusion names) or else the tree's root
    cause. Only hard, supporting evidence about the winner is kept; the citation must touch the
    winner or an entity on ``path``. No winner means an empty, ungrounded chain.
    """
    route = tuple(path)
    entity = named_entity
    if entity is None and tree is not None and tree.root_cause is not None:
        entity = tree.root_cause.entity
    evidence: tuple[Evidence, ...] = ()
    citation = None
    if entity is not None:
        if tree is not None:
            evidence = tuple(e for h in tree.hypotheses if h.entity == entity for e in h.validating_evidence)
        if onset is not None:
            citation = nearest_citation(changes, onset, window_before_s, window_after_s, {entity, *route})
    return EvidenceChain(
        entity=entity,
        path=route,
        evidence=evidence,
        citation=citation,
        subscores=MappingProxyType(dict(subscores or {})),
        grounding=derive_grounding(bool(evidence), citation is not None),
    )


def sanitize_confidence(confidence: float | None) -> float:
    """Clamp a self-reported confidence into [0, 1]; missing or NaN becomes 0.0."""
    if confidence is None or math.isnan(confidence):
        return 0.0
    return min(max(float(confidence), 0.0), 1.0)


def cap_confidence(confidence: float | None, grounding: Grounding) -> float:
    """The sanitized confidence, lowered to the cap of ``grounding`` (grounded is uncapped)."""
    value = sanitize_confidence(confidence)
    if grounding is Grounding.PARTIALLY_GROUNDED:
        return min(value, CAP_PARTIAL)
    if grounding is Grounding.UNGROUNDED:
        return min(value, CAP_UNGROUNDED)
    return value


@dataclass(frozen=True, slots=True)
class CappedConfidence:
    """Raw (sanitized) and capped confidence, both recorded; ``mode`` says which governs."""

    raw: float
    capped: float
    grounding: Grounding
    mode: Mode

    @property
    def governing(self) -> float:
        """The value the action ladder uses."""
        return self.capped if self.mode.governs else self.raw


def apply_cap(confidence: float | None, grounding: Grounding, mode: Mode) -> CappedConfidence:
    """Compute the cap under ``mode``: always computed, governing only when active."""
    raw = sanitize_confidence(confidence)
    return CappedConfidence(raw, cap_confidence(raw, grounding), grounding, mode)
