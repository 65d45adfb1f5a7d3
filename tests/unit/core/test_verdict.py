from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rca.core.evidence import Verdict
from rca.core.verdict import DEFAULT_THRESHOLDS, SIGNAL_KEYS, Thresholds, ToolOutput, classify, classify_text

S, R, U = Verdict.SUPPORTS, Verdict.REFUTES, Verdict.INCONCLUSIVE


# --- the paper's and the named cases ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "error_rate: 0.00",
        "no errors found",
        "no errors",
        "0 timeouts",
        "not OOMKilled",
        "without any 5xx",
        "latency within normal range",
        "errors: none",
        "timeouts=0",
        "not unhealthy",
        "without failures",
        "error_rate: 0.00\nERROR log level configured",
        "Errors found: 0",
        "error-free run",
        "0.0 errors",
        "it didn't fail",
        "failures were not detected",
        "none of the pods crashed",
        "zero 5xx responses",
    ],
)
def test_healthy_text_never_supports(text):
    assert classify_text(text) is R


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("error_rate: 0.37", S),
        ("connection refused", S),
        ("no errors but 3 timeouts", S),
        ("0 errors, 12 timeouts", S),
        ("pod is not ready", S),
        ("status: NOERROR, answer 10.0.0.1", U),
        ("GET /api 200 OK", R),
        ("the sky is blue", U),
        ("", U),
        ("   \n  ", U),
        ("[]", U),
    ],
)
def test_text_examples(text, expected):
    assert classify_text(text) is expected


def test_conservative_variant_makes_healthy_text_inconclusive():
    strict = Thresholds(healthy_text_refutes=False)
    assert classify_text("no errors found", strict) is U
    assert classify_text("connection refused", strict) is S
    assert classify_text("error_rate: 0.00", strict) is R  # numbers still refute


# --- failure guard -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        ToolOutput("error_rate: 0.9", ok=False),
        ToolOutput("connection refused", error="loki: query timed out"),
        ToolOutput("no errors", backend_status=504),
        ToolOutput("no errors", backend_status=404),
        ToolOutput("", signals={"error_rate": 0.0}, ok=False),
    ],
)
def test_failed_tool_call_is_inconclusive_never_refutes(output):
    assert output.failed
    assert classify(output) is U


def test_backend_2xx_is_not_a_failure():
    assert not ToolOutput("x", backend_status=200).failed
    assert classify(ToolOutput("error_rate: 0.5", backend_status=200)) is S


@pytest.mark.parametrize(
    "text",
    [
        "Loki query timed out",
        "query timeout after 30s: no errors",
        "0 series",
        "no data",
        "null",
        "{}",
        "No resources found in default namespace.",
        "HTTP/1.1 429 Too Many Requests",
        "404",
        '{"data":{"result":[]}}',
    ],
)
def test_text_failure_and_empty_shapes(text):
    assert classify_text(text) is U


# --- structured signals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signals", "expected"),
    [
        ({"error_rate": 0.05}, S),
        ({"error_rate": 0.0499}, U),
        ({"error_rate": 0}, R),
        ({"error_rate": "5%"}, S),
        ({"error_rate": 12}, S),
        ({"error_rate": "0.00"}, R),
        ({"error_rate": 0.06, "error_rate_baseline": 0.05}, R),
        ({"error_rate": 0.08, "error_rate_baseline": 0.05}, U),
        ({"error_rate": 0.10, "error_rate_baseline": 0.05}, S),
        ({"error_rate": 0.06, "error_rate_baseline": 0.0}, S),
        ({"error_rate": 0.01, "error_rate_baseline": 0.0}, U),
        ({"success_rate": 0.95}, S),
        ({"success_rate": 1.0}, R),
        ({"success_rate": "97%"}, U),
        ({"success_rate": 0.999, "success_rate_baseline": 0.999}, R),
        ({"error_count": 10}, S),
        ({"error_count": 9}, U),
        ({"error_count": 0}, R),
        ({"error_count": 30, "error_count_baseline": 15}, S),
        ({"error_count": 17, "error_count_baseline": 15}, R),
        ({"latency_ms": 900}, None),
        ({"latency_ms": 900, "latency_baseline_ms": 100}, S),
        ({"latency_ms": 120, "latency_baseline_ms": 100}, R),
        ({"latency_ms": 150, "latency_baseline_ms": 100}, U),
        ({"latency_ms": 40, "latency_baseline_ms": 10}, U),  # 4x, but a rise under 50 ms never supports
        ({"latency_ms": "1.5s", "latency_baseline_ms": "200ms"}, S),
        ({"latency_ms": "900us", "latency_baseline_ms": 1}, R),
        ({"latency_ms": "5000000ns", "latency_baseline_ms": 5}, R),
        ({"restarts": 1}, S),
        ({"restarts": 0}, R),
        ({"restarts": 0.5}, U),
        ({"oom_kills": 2}, S),
        ({"oom_kills": 0}, R),
        ({"unavailable_replicas": 1}, S),
        ({"unavailable_replicas": 0}, R),
        ({"anomaly_score": 0.8}, S),
        ({"anomaly_score": 0.2}, R),
        ({"anomaly_score": 0.5}, U),
        ({"change_in_window": True}, S),
        ({"change_in_window": False}, U),
        ({"change_in_window": "yes"}, S),
        ({"changepoint_at": 150.0}, None),  # no window given
        ({"error_rate": 0.0, "restarts": 3}, S),
        ({"error_rate": 0.0, "restarts": 0}, R),
        ({"error_rate": 0.0, "anomaly_score": 0.5}, U),
    ],
)
def test_structured_signals(signals, expected):
    verdict = classify(ToolOutput("level=error connection refused", signals=signals))
    # None: no signal applies, so the (faulty-looking) text decides.
    assert verdict is (S if expected is None else expected)


@pytest.mark.parametrize(("at", "expected"), [(100.0, S), (200.0, S), (99.9, U), (200.1, U)])
def test_changepoint_inside_the_onset_window(at, expected):
    out = ToolOutput("", signals={"changepoint_at": at}, onset_start=100.0, onset_end=200.0)
    assert classify(out) is expected


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -1, "n/a", "-0.5", "1.2 req/s", "3ms", "2xx", "150", "5 µs"],
)
def test_unusable_values_are_ignored(value):
    key = "latency_ms" if value == "5 µs" else ("error_rate" if value == "150" else "restarts")
    assert classify(ToolOutput("", signals={key: value})) is U  # nothing applies, empty text


def test_unknown_keys_and_settings_are_ignored():
    out = ToolOutput("", signals={"timeout_ms": 5000, "max_errors": 100, "error_threshold": 0.5, "foo": 1})
    assert classify(out) is U
    assert classify(ToolOutput("", signals={"error_rate": "7 %"})) is S  # unit with a space
    assert classify(ToolOutput("", signals={"error_rate": "3ms"})) is U  # a rate cannot carry a time unit


def test_structured_signals_beat_text():
    assert classify(ToolOutput("FATAL panic crash", signals={"error_rate": 0.0})) is R
    assert classify(ToolOutput("all healthy", signals={"restarts": 5})) is S


def test_custom_thresholds():
    strict = Thresholds(error_rate=0.5, restarts=3)
    assert classify(ToolOutput(signals={"error_rate": 0.2}), strict) is U
    assert classify(ToolOutput(signals={"restarts": 2}), strict) is U
    assert DEFAULT_THRESHOLDS.error_rate == 0.05


def test_signal_keys_document_every_recognised_key():
    for key in SIGNAL_KEYS:
        assert isinstance(SIGNAL_KEYS[key], str)
    assert {"error_rate", "latency_baseline_ms", "changepoint_at", "change_in_window"} <= set(SIGNAL_KEYS)


def test_tool_output_is_immutable():
    raw = {"error_rate": 0.3}
    out = ToolOutput("x", raw)
    raw["error_rate"] = 0.0
    assert out.signals["error_rate"] == 0.3
    with pytest.raises(TypeError):
        out.signals["error_rate"] = 1  # type: ignore[index]


# --- text-embedded signals ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Restart Count:  3", S),
        ("restarts=0 oom_kills=0", R),
        ('"error_rate": 0.21', S),
        ('errors_total{job="api"} 0', R),
        ('http_request_duration_seconds_bucket{le="0.5"} 1200', U),
        ("timeout_seconds: 30", U),
        ("2/3 pods ready", S),
        ("3 of 3 replicas are available", R),
        ("latency_ms: 950\nlatency_baseline_ms: 100", S),
        ("latency_seconds: 0.9, latency_baseline_seconds: 0.1", S),
        (
            "NAME  READY  STATUS\n\n"
            "NAME    READY   STATUS    RESTARTS   AGE\nweb-0   1/1     Running   0          1d",
            R,
        ),
        ("NAME    READY   STATUS    RESTARTS   AGE\nweb-0   1/1     Running   0\nshort row", R),
    ],
)
def test_signals_found_in_text(text, expected):
    assert classify_text(text) is expected


# --- fuzzing and invariants --------------------------------------------------------------------


@settings(max_examples=500)
@given(st.text())
def test_fuzz_classify_text_never_raises(text):
    assert classify_text(text) in tuple(Verdict)


@settings(max_examples=300)
@given(
    st.dictionaries(
        st.sampled_from([*SIGNAL_KEYS, "p99", "junk", "restart_count"]),
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.booleans(), st.text(max_size=8)
        ),
        max_size=6,
    ),
    st.text(max_size=200),
    st.none() | st.floats(allow_nan=False),
)
def test_fuzz_classify_never_raises(signals, text, onset):
    out = ToolOutput(text, signals, onset_start=onset, onset_end=None if onset is None else onset + 300)
    assert classify(out) in tuple(Verdict)


_NEGATED_FAULTS = st.tuples(
    st.sampled_from(["no", "not", "without any", "zero", "0", "never saw", "none of the pods reported"]),
    st.sampled_from(
        ["errors", "timeouts", "5xx", "OOMKilled", "crashes", "failures", "panics", "exceptions"]
    ),
).map(" ".join)
_ZERO_COUNTS = st.tuples(
    st.sampled_from(
        ["error_rate", "errors", "timeouts", "restarts", "oom_kills", "error_count", "Restart Count"]
    ),
    st.sampled_from([": ", "=", " = ", ":  "]),
    st.sampled_from(["0", "0.0", "0.00", "0%"]),
).map("".join)
_HEALTHY_WORDS = st.sampled_from(
    ["healthy", "all checks passed", "Running", "status=200", "latency within normal range"]
)


@settings(max_examples=500)
@given(
    st.lists(st.one_of(_NEGATED_FAULTS, _ZERO_COUNTS, _HEALTHY_WORDS), min_size=1, max_size=5),
    st.sampled_from(["\n", "; ", ", ", " | "]),
    st.booleans(),
)
def test_generated_healthy_reports_never_support(parts, sep, upper):
    text = sep.join(parts)
    text = text.upper() if upper else text
    assert classify_text(text) is not S
