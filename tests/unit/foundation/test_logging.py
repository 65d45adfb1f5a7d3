"""Structured logs: JSON lines carrying the incident and investigation the work is about."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from django.conf import settings
from pythonjsonlogger.json import JsonFormatter

from rca.config import ConfigError, load_config
from rca.log_context import ContextFilter, bind


def capture() -> tuple[logging.Logger, io.StringIO]:
    """A logger writing through the configured JSON formatter and context filter into a string."""
    spec = settings.LOGGING["formatters"]["json"]
    handler = logging.StreamHandler(stream := io.StringIO())
    handler.setFormatter(JsonFormatter(spec["fmt"], rename_fields=spec["rename_fields"]))
    handler.addFilter(ContextFilter())
    logger = logging.getLogger("rootline.tests.structured")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, stream


def test_a_record_inside_bound_work_carries_its_ids_as_json() -> None:
    logger, stream = capture()
    with bind(incident=12, investigation=34):
        logger.warning("recall skipped: %s", "memory unavailable")
    logger.info("outside any investigation")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "recall skipped: memory unavailable"
    assert (first["level"], first["logger"]) == ("WARNING", "rootline.tests.structured")
    assert (first["incident_id"], first["investigation_id"]) == (12, 34)
    assert "time" in first
    assert (second["incident_id"], second["investigation_id"]) == (None, None)


def test_the_log_format_is_a_setting(tmp_path: Path) -> None:
    base = {"SECRET_KEY": "k" * 40, "ROOTLINE_VAR_DIR": str(tmp_path)}
    assert load_config(base).log_format == "json"
    assert load_config({**base, "ROOTLINE_LOG_FORMAT": "TEXT"}).log_format == "text"
    with pytest.raises(ConfigError, match="ROOTLINE_LOG_FORMAT"):
        load_config({**base, "ROOTLINE_LOG_FORMAT": "xml"})
