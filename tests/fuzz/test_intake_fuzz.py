"""Hostile and malformed intake payloads through the real WSGI stack and PostgreSQL.

Whatever the body, the answer is 202 (valid: every alert stored exactly once) or a 4xx whose JSON
names the offending field: never a 500.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from rca.api.throttling import IntakeTokenThrottle
from rca.incidents.models import Alert
from rca.incidents.tokens import issue_token
from tests.fuzz.conftest import FUZZ, JSON, NASTY_TEXT, mutate
from tests.integration.api.payloads import am_alert, am_payload, generic_alert

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

AM = "/api/v1/webhooks/alertmanager/"
GENERIC = "/api/v1/webhooks/generic/"


@pytest.fixture
def senders(db: None, settings: Any) -> Iterator[dict[str, APIClient]]:
    """A client per webhook carrying its intake token; the rate limit is out of the way."""
    settings.ROOTLINE_INTAKE_RATE = "1000000/min"
    clients = {}
    keys = []
    for url, source in ((AM, "alertmanager"), (GENERIC, "generic")):
        issued = issue_token(f"fuzz-{source}", source)
        keys.append(IntakeTokenThrottle.cache_format % {"scope": "intake_token", "ident": issued.record.pk})
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.token}")
        clients[url] = client
    yield clients
    cache.delete_many(keys)


def check(client: APIClient, url: str, raw: bytes) -> Any:
    """POST `raw`; assert the contract; return the response."""
    response = client.post(url, data=raw, content_type="application/json")
    assert response.status_code in (202, 400), (response.status_code, raw[:500], response.content[:500])
    answer = response.json()
    if response.status_code == 400:
        errors = answer["errors"]
        assert errors, answer  # at least one field named
        assert all(isinstance(k, str) and k and isinstance(v, str) and v for k, v in errors.items()), answer
    return answer


def stored_once(fingerprints: set[str]) -> None:
    for fingerprint in fingerprints:
        assert Alert.objects.filter(fingerprint=fingerprint).count() >= 1
    counts: dict[tuple[str, str, object], int] = {}
    for alert in Alert.objects.filter(fingerprint__in=fingerprints):
        key = (alert.source, alert.fingerprint, alert.starts_at)
        counts[key] = counts.get(key, 0) + 1
    assert all(n == 1 for n in counts.values()), counts


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


RAW_BODIES = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"",
            b"[" * 100_000 + b"]" * 100_000,
            b'{"a":' * 5000 + b"1" + b"}" * 5000,
            b"NaN",
            b'{"version": Infinity}',
            b'"\\ud800"',
            b"\xff\xfe{}",
            b'{"alerts": [1, 2, 3]',
        ]
    ),
)


@FUZZ
@given(raw=RAW_BODIES)
def test_raw_bodies(senders: dict[str, APIClient], raw: bytes) -> None:
    for url in (AM, GENERIC):
        check(senders[url], url, raw)


@FUZZ
@given(payload=JSON)
def test_arbitrary_json(senders: dict[str, APIClient], payload: Any) -> None:
    for url in (AM, GENERIC):
        check(senders[url], url, dumps(payload))


@FUZZ
@given(data=st.data(), n=st.integers(1, 4))
def test_mutated_alertmanager_payloads(senders: dict[str, APIClient], data: st.DataObject, n: int) -> None:
    fingerprints = [data.draw(st.text("0123456789abcdef", min_size=16, max_size=16)) for _ in range(n)]
    base = am_payload(*(am_alert(f) for f in fingerprints))
    payload = mutate(data, base)
    answer = check(senders[AM], AM, dumps(payload))
    if "alerts_stored" in answer:
        sent = {a["fingerprint"] for a in payload["alerts"] if isinstance(a, dict) and a.get("fingerprint")}
        stored_once(sent)
        # Sent again: nothing new is stored.
        again = check(senders[AM], AM, dumps(payload))
        assert again["alerts_stored"] == 0, again
        stored_once(sent)


@FUZZ
@given(data=st.data(), external_id=NASTY_TEXT)
def test_mutated_generic_payloads(
    senders: dict[str, APIClient], data: st.DataObject, external_id: str
) -> None:
    payload = mutate(data, generic_alert(external_id=external_id))
    answer = check(senders[GENERIC], GENERIC, dumps(payload))
    if "alerts_stored" in answer:
        fingerprint = f"{payload['source']}:{payload['external_id']}"
        stored_once({fingerprint})
        assert check(senders[GENERIC], GENERIC, dumps(payload))["alerts_stored"] == 0


@FUZZ
@given(text=NASTY_TEXT, where=st.sampled_from(["label", "annotation", "groupKey", "fingerprint", "url"]))
def test_nasty_strings_in_valid_alertmanager_payloads(
    senders: dict[str, APIClient], text: str, where: str
) -> None:
    alert = am_alert("00000000000000aa")
    payload = am_payload(alert)
    if where == "label":
        alert["labels"][text] = text
    elif where == "annotation":
        alert["annotations"]["summary"] = text
    elif where == "groupKey":
        payload["groupKey"] = text
    elif where == "fingerprint":
        alert["fingerprint"] = text
    else:
        alert["generatorURL"] = text
    check(senders[AM], AM, dumps(payload))
