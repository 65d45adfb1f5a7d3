"""Log templates: the statement a line comes from, by its statement id when it names one, else by its
drain3 template (configured here, no persistence; numbers, ids, uuids and clocks masked)."""

from __future__ import annotations

import re

import pandas as pd
from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

from rca.core.redact import redact

BODY_CHARS = 200  # templates are mined on the head of a line: long payload tails are parameters
TEMPLATE_SHOWN = 70  # characters of a template quoted in a summary

# Masks applied before mining (vectorised, so that identical masked lines are mined once) and again
# inside drain3 (its own masker, for lines mined one by one). Order matters: the specific shapes first.
MASKS: tuple[tuple[str, str], ...] = (
    (r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?Z?)?|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?", "TS"),
    (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "UUID"),
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "IP"),
    (r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{12,}\b", "ID"),
    # Numbers that stand alone; digits glued to a name (`Impl#37`, `ts2`) identify a statement.
    (r"(?<![A-Za-z0-9_#.])[-+]?\d+(?:\.\d+)?", "NUM"),
)
_MASK_RES = tuple((re.compile(p), f"<{name}>") for p, name in MASKS)

# A statement id: a (dotted) logger name glued to a line number, as logback's `%logger#%line` writes.
_STATEMENT = re.compile(r"(?<![\w.$])((?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*#\d+)\b")
_AFTER_STATEMENT = re.compile(r"#\d+\b(?:\s+TraceID: <ID>)?(?:\s+SpanID: <ID>)?\s*([^<:=]{0,60})")


def mask(text: pd.Series) -> pd.Series:
    """Mask clocks, uuids, ips, hex ids and free-standing numbers (vectorised)."""
    out = text
    for pattern, token in _MASK_RES:
        out = out.str.replace(pattern, token, regex=True)
    return out.str.replace(r"\s+", " ", regex=True).str.strip()


def new_miner() -> TemplateMiner:
    """A drain3 miner configured in code: in memory, with the masks above."""
    config = TemplateMinerConfig()
    config.masking_instructions = [MaskingInstruction(p, name) for p, name in MASKS]
    config.drain_sim_th = 0.5
    # Drain never merges lines whose first depth-2 tokens differ: with depth 5 those are the clock,
    # the level and the logger / statement (`Impl#37`) in most formats, so that two statements of one
    # method stay two templates (numbers are masked above, so tokens with digits may be tree keys).
    config.drain_depth = 5
    config.drain_max_children = 100
    config.parametrize_numeric_tokens = False
    config.profiling_enabled = False
    return TemplateMiner(persistence_handler=None, config=config)


def short(template: str) -> str:
    """A template fit for a summary: masks collapsed, redacted, bounded."""
    text = re.sub(r"(?:<\*>|<(?:TS|NUM|ID)>)\s*", "", template)
    text = re.sub(r"\b(?:TraceID|SpanID):\s*", "", text).strip()
    text = redact(text)
    return text if len(text) <= TEMPLATE_SHOWN else text[: TEMPLATE_SHOWN - 1] + "\u2026"


def templates(frame: pd.DataFrame) -> pd.Series:
    """The template of every line of one entity: its statement id when the line names one (a logger
    and line number such as `t.s.TravelServiceImpl#451`: exactly one statement of the code, which
    drain may merge with its neighbours), else its drain3 template (mined over distinct masked lines).
    """
    head = frame["body"].str.slice(0, BODY_CHARS)
    statement = head.str.extract(_STATEMENT, expand=False)
    masked = mask(head)
    miner = new_miner()
    ids: dict[str, int] = {}
    for line in pd.unique(masked[statement.isna()]):  # first-seen order: deterministic
        ids[line] = int(miner.add_log_message(line)["cluster_id"])
    texts = {c.cluster_id: c.get_template() for c in miner.drain.clusters}
    mined = masked.map(lambda line: texts.get(ids.get(line, -1), line))
    level = frame["severity"].str.upper()
    # The statement's text after the id, up to the first value (a mask, or a `name:` / `name=` whose
    # value may be free text such as a station name), keeps the summary readable.
    tail = masked.str.extract(_AFTER_STATEMENT, expand=False).fillna("")
    return statement.radd(level + " ").str.cat(tail, sep=" ").str.strip().where(statement.notna(), mined)
