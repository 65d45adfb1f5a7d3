"""The stored result as the pages read it (never the telemetry)."""

from __future__ import annotations

from typing import Any

from rca.incidents.models import Investigation
from rca.incidents.results import result_document
from rca.investigation.document import ResultDocument


def distinct_chain(document: ResultDocument | None) -> dict[str, Any]:
    """The stored evidence chain with each evidence line once."""
    if document is None:
        return {}
    chain = document.chain.model_copy(update={"evidence": document.chain.distinct_evidence()})
    return chain.model_dump(mode="json")


def result_of(investigation: Investigation) -> ResultDocument:
    """The result document of a succeeded investigation (ValueError before it has one)."""
    document = result_document(investigation)
    if document is None:
        raise ValueError(f"investigation {investigation.pk} has no result yet")
    return document
