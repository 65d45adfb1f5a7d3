"""The calibration map the engine's confident exit reads, stored as JSON next to the engine.

`calibration.json` holds the map (`rca.core.calibration.CalibrationMap.to_dict()`) and how it was
produced: the `pooled_map` of `manage.py evaluate --folds dataset` on every `split=dev` case, i.e.
isotonic regression fitted on all dev rows (docs/evaluation.md section 3). Refit it after any change
to the engine's scores with the command recorded in the file.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from rca.core.calibration import CalibrationError, CalibrationMap

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")


@cache
def load_calibration(path: Path = CALIBRATION_FILE) -> CalibrationMap:
    """The stored map; CalibrationError naming the file when it is missing or malformed."""
    try:
        stored = json.loads(path.read_text())
        return CalibrationMap.from_dict(stored["map"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CalibrationError(f"{path}: no calibration map ({exc})") from exc
