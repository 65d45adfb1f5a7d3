"""Reading back the OpenMetrics text the replay writes (test helper)."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from rca.telemetry.replay.openmetrics import Exposition

_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+) (?P<ts>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    """One sample line."""

    name: str
    labels: dict[str, str]
    value: float
    time: float


def parse(body: str) -> list[Sample]:
    """Every sample line of an OpenMetrics text (comments skipped)."""
    out = []
    for line in body.splitlines():
        m = _LINE.match(line)
        if m:
            labels = {
                k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _LABEL.findall(m["labels"] or "")
            }
            out.append(Sample(m["name"], labels, float(m["value"]), float(m["ts"])))
    return out


def written(expo: Exposition, **kwargs: float) -> list[Sample]:
    """What `expo` writes, parsed."""
    buf = io.StringIO()
    expo.write(buf, **kwargs)
    return parse(buf.getvalue())


def select(samples: list[Sample], name: str, **labels: str) -> list[Sample]:
    """Samples of `name` whose labels include `labels`, in written order."""
    return [s for s in samples if s.name == name and labels.items() <= s.labels.items()]


def values(samples: list[Sample], name: str, **labels: str) -> list[float]:
    """The values of `select(...)`."""
    return [s.value for s in select(samples, name, **labels)]
