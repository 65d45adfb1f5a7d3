"""Log templates: the statement a line comes from, by its statement id when the source declares that its
lines name one (`rca.telemetry.model.Conventions`), else by its drain3 template (configured here, no
persistence; numbers, ids, uuids and clocks masked)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import pandas as pd
from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

from rca.core.redact import redact
from rca.telemetry.model import Conventions

BODY_CHARS = 200  # templates are mined on the head of a line: long payload tails are parameters
TEMPLATE_SHOWN = 70  # characters of a template quoted in a summary

# Masks applied before mining (vectorised, so that identical masked lines are mined once) and again
# inside drain3 (its own masker, for lines mined one by one). Order matters: the specific shapes first.
# Each pattern opens with the character class its match starts with, and checks the word boundary
# (`\b`) or the character before it with a look-behind after that first character: `re` then skips
# straight to candidate characters instead of trying every position of every line (several times
# faster on long lines). The matches are those of the plain forms noted beside each.
MASKS: tuple[tuple[str, str], ...] = (
    # \b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?Z?)?|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?
    (
        r"\d(?<!\w\d)(?:\d{3}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?Z?)?"
        r"|\d:\d{2}:\d{2}(?:[.,]\d+)?)",
        "TS",
    ),
    # \b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b
    (
        r"[0-9a-fA-F](?<!\w[0-9a-fA-F])[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
        r"[0-9a-fA-F]{12}\b",
        "UUID",
    ),
    # \b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b
    (r"\d(?<!\w\d)\d{0,2}(?:\.\d{1,3}){3}(?::\d+)?\b", "IP"),
    # \b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{12,}\b
    (r"[0-9a-fA-F](?<!\w[0-9a-fA-F])(?:(?<=\d)|(?=[0-9a-fA-F]*\d))[0-9a-fA-F]{11,}\b", "ID"),
    # Numbers that stand alone; digits glued to a name (`Service#37`, `ts2`) identify a statement.
    # (?<![A-Za-z0-9_#.])[-+]?\d+(?:\.\d+)?
    (r"[-+\d](?<![A-Za-z0-9_#.][-+\d])(?:(?<=[-+])\d+|(?<=\d)\d*)(?:\.\d+)?", "NUM"),
)
_MASK_RES = tuple((re.compile(p), f"<{name}>") for p, name in MASKS)


@dataclass(frozen=True)
class Formats:
    """The patterns a source's conventions give: its statement id (group 1), the text after a statement
    id up to the first value (group `tail`, past any trace markers), and the trace markers themselves."""

    statement: re.Pattern[str] | None
    after_statement: re.Pattern[str] | None
    markers: re.Pattern[str] | None


@lru_cache(maxsize=16)
def formats(conventions: Conventions) -> Formats:
    """The compiled patterns of `conventions` (once per set of conventions)."""
    markers = "|".join(re.escape(m) for m in conventions.trace_markers)
    statement = conventions.statement_id
    after = "".join(rf"(?:\s+{re.escape(m)} <ID>)?" for m in conventions.trace_markers)
    return Formats(
        statement=re.compile(statement) if statement else None,
        after_statement=re.compile(rf"(?:{statement}){after}\s*(?P<tail>[^<:=]{{0,60}})")
        if statement
        else None,
        markers=re.compile(rf"\b(?:{markers})\s*") if markers else None,
    )


# Lines masked lately, kept across investigations: successive incidents of one system read many of the
# same lines (overlapping windows), and masking is most of the cost of templating a line.
MASK_CACHE_LINES = 1 << 16
_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=MASK_CACHE_LINES)
def _mask_line(line: str) -> str:
    for pattern, token in _MASK_RES:
        line = pattern.sub(token, line)
    return _SPACE.sub(" ", line).strip()


def mask(text: pd.Series) -> pd.Series:
    """Mask clocks, uuids, ips, hex ids and free-standing numbers, and collapse whitespace."""
    return text.map(_mask_line, na_action="ignore")


def new_miner() -> TemplateMiner:
    """A drain3 miner configured in code: in memory, with the masks above."""
    config = TemplateMinerConfig()
    config.masking_instructions = [MaskingInstruction(p, name) for p, name in MASKS]
    config.drain_sim_th = 0.5
    # Drain never merges lines whose first depth-2 tokens differ: with depth 5 those are the clock,
    # the level and the logger / statement (`Service#37`) in most formats, so that two statements of one
    # method stay two templates (numbers are masked above, so tokens with digits may be tree keys).
    config.drain_depth = 5
    config.drain_max_children = 100
    config.parametrize_numeric_tokens = False
    config.profiling_enabled = False
    return TemplateMiner(persistence_handler=None, config=config)


def short(template: str, conventions: Conventions) -> str:
    """A template fit for a summary: masks and the source's trace markers collapsed, redacted, bounded."""
    text = re.sub(r"(?:<\*>|<(?:TS|NUM|ID)>)\s*", "", template)
    markers = formats(conventions).markers
    text = (markers.sub("", text) if markers else text).strip()
    text = redact(text)
    return text if len(text) <= TEMPLATE_SHOWN else text[: TEMPLATE_SHOWN - 1] + "\u2026"


def _mined(masked: pd.Series, entities: pd.Series) -> pd.Series:
    """The drain3 template of every masked line, mined entity by entity (one miner each, over its
    distinct lines in first-seen order: deterministic), all entities in one pass over the lines."""
    parts: list[pd.Series] = []
    for _, lines in masked.groupby(entities, sort=False):
        miner = new_miner()
        ids = {line: int(miner.add_log_message(line)["cluster_id"]) for line in pd.unique(lines)}
        texts = {c.cluster_id: c.get_template() for c in miner.drain.clusters}
        parts.append(lines.map({line: texts[cluster] for line, cluster in ids.items()}))
    return pd.concat(parts) if parts else pd.Series(index=masked.index, dtype=object)


def templates(frame: pd.DataFrame, conventions: Conventions) -> pd.Series:
    """The template of every line (of every entity of `frame`: each entity's own, by its column
    `entity` when there is one): its statement id when the line names one in the source's format (a
    logger and line number such as `com.example.OrderService#88`: exactly one statement of the code,
    which drain may merge with its neighbours), else its drain3 template (mined over the entity's
    distinct masked lines). Masks and patterns run once over every entity's lines.
    """
    found = formats(conventions)
    head = frame["body"].str.slice(0, BODY_CHARS)
    if found.statement is None or found.after_statement is None:
        statement = pd.Series(pd.NA, index=frame.index, dtype=object)
    else:
        statement = head.str.extract(found.statement, expand=False)
    masked = mask(head)
    entities = frame["entity"] if "entity" in frame else pd.Series("", index=frame.index)
    pending = statement.isna()
    mined = _mined(masked[pending], entities[pending]).reindex(frame.index)
    level = frame["severity"].str.upper()
    if found.after_statement is None:
        return mined
    # The statement's text after the id, up to the first value (a mask, or a `name:` / `name=` whose
    # value may be free text such as a place name), keeps the summary readable.
    tail = masked.str.extract(found.after_statement)["tail"].fillna("")
    return statement.radd(level + " ").str.cat(tail, sep=" ").str.strip().where(statement.notna(), mined)
