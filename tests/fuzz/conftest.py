"""Hypothesis settings of the fuzz and property tests, and strategies they share.

`HYPOTHESIS_PROFILE=long` selects the long run (thousands of inputs per target, minutes); the default
`fuzz-ci` profile keeps the whole folder within about 40 s. The profiles are applied per test (the
`FUZZ` decorator), so loading this folder changes no other test's Hypothesis settings.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

_COMMON: dict[str, Any] = {
    "deadline": None,
    "derandomize": False,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
}
settings.register_profile("fuzz-ci", max_examples=25, **_COMMON)
settings.register_profile("long", max_examples=1000, **_COMMON)
FUZZ = settings(settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "fuzz-ci")))

# Strings that break naive code: NUL, lone surrogates, right-to-left marks, emoji, very long runs.
NASTY_TEXT = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.sampled_from(["\x00", "a\x00b", "\ud800", "\udfff", "\u202e", "🔥" * 50, "null", "NaN", ""]),
    st.text(min_size=300, max_size=3000),
)
# Any JSON value: scalars of every type, nested containers (bounded so a body stays small).
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | NASTY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NASTY_TEXT, inner, max_size=4),
    max_leaves=20,
)


def mutate(data: st.DataObject, value: Any, depth: int = 0) -> Any:
    """`value` with some subtrees replaced by arbitrary JSON, some keys dropped or added, the rest kept.

    Mutating a realistic document reaches deeper into a parser than arbitrary JSON does, which is
    mostly refused at its first key.
    """
    choice = data.draw(st.sampled_from(("keep", "keep", "keep", "replace", "recurse", "recurse")))
    if choice == "replace":
        return data.draw(JSON)
    if choice == "keep" or depth > 6:
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if data.draw(st.integers(0, 9)) == 0:
                continue  # a missing field
            out[key] = mutate(data, item, depth + 1)
        if data.draw(st.integers(0, 9)) == 0:
            out[data.draw(NASTY_TEXT)] = data.draw(JSON)  # an unexpected field
        return out
    if isinstance(value, list):
        items = [mutate(data, item, depth + 1) for item in value]
        if items and data.draw(st.integers(0, 9)) == 0:
            items = items[: data.draw(st.integers(0, len(items) - 1))]
        if items and data.draw(st.integers(0, 9)) == 0:
            items.append(mutate(data, items[0], depth + 1))
        return items
    return value
