"""Webhooks: Alertmanager v4 and generic JSON, per-source bearer tokens and HMAC signatures."""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from rca.incidents.models import Alert, Incident, IntakeToken
from rca.incidents.tokens import IssuedToken, hash_token, issue_token, sign
from tests.integration.api.payloads import am_alert, am_payload, body, generic_alert

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

AM = "/api/v1/webhooks/alertmanager/"
GENERIC = "/api/v1/webhooks/generic/"


def post(url: str, data: bytes, **headers: str) -> Any:
    return APIClient().post(url, data=data, content_type="application/json", **headers)


def bearer(issued: IssuedToken) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {issued.token}"}


def signed(issued: IssuedToken, data: bytes) -> dict[str, str]:
    assert issued.hmac_secret
    return {"HTTP_X_ROOTLINE_SIGNATURE": sign(issued.hmac_secret, data)}


# --- happy paths ------------------------------------------------------------------------------------


def test_alertmanager_payload_with_bearer_token_opens_an_incident(am_token: IssuedToken) -> None:
    response = post(AM, body(am_payload()), **bearer(am_token))

    assert response.status_code == 202, response.content
    incident = Incident.objects.get()
    assert response.json() == {
        "incidents": [incident.pk],
        "incidents_created": [incident.pk],
        "incidents_updated": [],
        "alerts_stored": 1,
        "alerts_resolved": 0,
        "duplicates": 0,
    }
    assert incident.symptom_entity == "checkout"
    assert incident.investigations.count() == 1  # queued


def test_resend_is_a_duplicate(am_token: IssuedToken) -> None:
    data = body(am_payload())
    post(AM, data, **bearer(am_token))
    again = post(AM, data, **bearer(am_token))
    assert again.status_code == 202
    assert again.json()["duplicates"] == 1
    assert Alert.objects.count() == 1


def test_grafana_extras_are_accepted_and_kept_raw(am_token: IssuedToken) -> None:
    alert = {**am_alert(), "values": {"B": 0.07}, "silenceURL": "http://grafana/silence"}
    response = post(AM, body(am_payload(alert, orgId=1)), **bearer(am_token))
    assert response.status_code == 202
    assert Alert.objects.get().raw["orgId"] == 1


def test_hmac_signature_alone_authenticates(am_token: IssuedToken) -> None:
    data = body(am_payload())
    response = post(AM, data, **signed(am_token, data))
    assert response.status_code == 202, response.content


def test_bearer_and_signature_together_must_both_verify(am_token: IssuedToken) -> None:
    data = body(am_payload())
    assert post(AM, data, **bearer(am_token), **signed(am_token, data)).status_code == 202
    tampered = {"HTTP_X_ROOTLINE_SIGNATURE": sign(am_token.hmac_secret or "", data + b" ")}
    response = post(AM, data, **bearer(am_token), **tampered)
    assert response.status_code == 401
    assert "X-Rootline-Signature" in response.json()["detail"]


def test_generic_alert(generic_token: IssuedToken) -> None:
    response = post(GENERIC, body(generic_alert()), **bearer(generic_token))
    assert response.status_code == 202, response.content
    incident = Incident.objects.get()
    assert response.json()["incidents_created"] == [incident.pk]
    assert incident.source == "generic"
    assert incident.fingerprint == "uptime-robot:check-42"


# --- credentials ------------------------------------------------------------------------------------


def test_missing_credentials_are_401_with_a_challenge(am_token: IssuedToken) -> None:
    response = post(AM, body(am_payload()))
    assert response.status_code == 401
    assert "intake token" in response.json()["detail"]
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert Incident.objects.count() == 0


@pytest.mark.parametrize(
    "authorization",
    ["Bearer rlt_wrong", "Bearer ", "Token abc", "Basic dXNlcjpwdw==", "rlt_no_scheme"],
)
def test_wrong_token_is_401(am_token: IssuedToken, authorization: str) -> None:
    response = post(AM, body(am_payload()), HTTP_AUTHORIZATION=authorization)
    assert response.status_code == 401
    assert response.json()["detail"]
    assert Incident.objects.count() == 0


def test_token_of_another_source_is_refused(am_token: IssuedToken, generic_token: IssuedToken) -> None:
    assert post(GENERIC, body(generic_alert()), **bearer(am_token)).status_code == 401
    assert post(AM, body(am_payload()), **bearer(generic_token)).status_code == 401


def test_inactive_token_is_refused(am_token: IssuedToken) -> None:
    IntakeToken.objects.filter(pk=am_token.record.pk).update(active=False)
    data = body(am_payload())
    assert post(AM, data, **bearer(am_token)).status_code == 401
    assert post(AM, data, **signed(am_token, data)).status_code == 401


def token_lookups(data: bytes, issued: IssuedToken) -> tuple[int, int]:
    """(status, queries on the token table) of one delivery with `issued`'s bearer token."""
    with CaptureQueriesContext(connection) as queries:
        status = post(AM, data, **bearer(issued)).status_code
    return status, sum("incidents_intaketoken" in q["sql"] for q in queries.captured_queries)


def test_a_verified_token_is_remembered_for_a_few_seconds(am_token: IssuedToken, settings: Settings) -> None:
    """A storm does not look its token up per request; a token deactivated without `save()` (SQL, by
    another web process) is refused once the process's memory of it expires."""
    settings.ROOTLINE_RELIABILITY = replace(settings.ROOTLINE_RELIABILITY, intake_token_cache_s=1)
    data = body(am_payload())
    assert token_lookups(data, am_token) == (202, 1)
    assert token_lookups(data, am_token) == (202, 0)  # remembered
    IntakeToken.objects.filter(pk=am_token.record.pk).update(active=False)  # no signal
    assert token_lookups(data, am_token) == (202, 0)  # within the bound
    time.sleep(1.1)
    assert token_lookups(data, am_token) == (401, 1)
    assert token_lookups(data, am_token) == (401, 1)  # a refused token is never remembered


def test_a_token_deactivated_with_save_is_refused_at_once(am_token: IssuedToken) -> None:
    data = body(am_payload())
    assert post(AM, data, **bearer(am_token)).status_code == 202  # remembered
    record = IntakeToken.objects.get(pk=am_token.record.pk)
    record.active = False
    record.save()  # as the admin's deactivation does
    assert post(AM, data, **bearer(am_token)).status_code == 401


def test_without_the_token_memory_every_request_looks_the_token_up(
    am_token: IssuedToken, settings: Settings
) -> None:
    settings.ROOTLINE_RELIABILITY = replace(settings.ROOTLINE_RELIABILITY, intake_token_cache_s=0)
    data = body(am_payload())
    assert token_lookups(data, am_token) == (202, 1)
    IntakeToken.objects.filter(pk=am_token.record.pk).update(active=False)
    assert token_lookups(data, am_token) == (401, 1)


@pytest.mark.parametrize(
    "signature",
    [
        "sha256=" + "0" * 64,
        "sha256=",
        "md5=abc",
        "not-a-signature",
    ],
)
def test_wrong_hmac_is_401(am_token: IssuedToken, signature: str) -> None:
    response = post(AM, body(am_payload()), HTTP_X_ROOTLINE_SIGNATURE=signature)
    assert response.status_code == 401
    assert "X-Rootline-Signature" in response.json()["detail"]


def test_signature_over_another_body_is_refused(am_token: IssuedToken) -> None:
    data = body(am_payload())
    other = body(am_payload(am_alert("ffff")))
    assert post(AM, other, **signed(am_token, data)).status_code == 401


def test_signature_of_a_bearer_only_token_is_refused(generic_token: IssuedToken) -> None:
    data = body(generic_alert())
    response = post(GENERIC, data, HTTP_X_ROOTLINE_SIGNATURE=sign(generic_token.token, data))
    assert response.status_code == 401


def test_user_credentials_do_not_open_the_webhooks(approver: APIClient) -> None:
    response = approver.post(AM, data=body(am_payload()), content_type="application/json")
    assert response.status_code == 401


def test_token_is_stored_hashed_only(am_token: IssuedToken) -> None:
    row = IntakeToken.objects.get()
    assert row.token_hash == hash_token(am_token.token)
    stored = " ".join(str(v) for v in IntakeToken.objects.values_list().get())
    assert am_token.token not in stored
    assert am_token.hmac_secret
    assert am_token.hmac_secret not in stored


# --- payload errors ---------------------------------------------------------------------------------


def errors_of(response: Any) -> dict[str, str]:
    assert response.status_code == 400, response.content
    return response.json()["errors"]


def test_missing_alerts_names_the_field(am_token: IssuedToken) -> None:
    payload = am_payload()
    del payload["alerts"]
    assert "alerts" in errors_of(post(AM, body(payload), **bearer(am_token)))


def test_bad_starts_at_names_the_alert_field(am_token: IssuedToken) -> None:
    errors = errors_of(post(AM, body(am_payload(am_alert(starts_at="yesterday"))), **bearer(am_token)))
    assert "alerts[0].startsAt" in errors
    assert "format" in errors["alerts[0].startsAt"].lower()


def test_wrong_version_is_refused_with_the_reason(am_token: IssuedToken) -> None:
    errors = errors_of(post(AM, body({**am_payload(), "version": "3"}), **bearer(am_token)))
    assert "unsupported webhook version '3'" in errors["version"]


def test_generic_missing_fields_are_each_named(generic_token: IssuedToken) -> None:
    payload = generic_alert()
    for key in ("external_id", "title", "starts_at"):
        del payload[key]
    errors = errors_of(post(GENERIC, body(payload), **bearer(generic_token)))
    assert {"external_id", "title", "starts_at"} <= set(errors)
    assert all("required" in errors[k] for k in ("external_id", "title", "starts_at"))


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b"",
        b'{"version": NaN}',
        b"\xff\xfe garbage",
        b"[" * 100_000,
        body({"version": "4", "x": "nul \u0000 inside"}),
    ],
    ids=["broken", "empty", "nan", "not-utf8", "deep", "nul"],
)
def test_unparseable_body_is_400_naming_body(am_token: IssuedToken, data: bytes) -> None:
    assert "body" in errors_of(post(AM, data, **bearer(am_token)))


@pytest.mark.parametrize("payload", [[], "text", 4, None])
def test_json_that_is_not_an_object_is_400(am_token: IssuedToken, payload: Any) -> None:
    assert errors_of(post(AM, body(payload), **bearer(am_token)))


def test_a_value_too_long_for_its_column_is_400_not_500(am_token: IssuedToken) -> None:
    alert = am_alert(severity="x" * 100)  # becomes Incident.severity, a 32-character column
    response = post(AM, body(am_payload(alert)), **bearer(am_token))
    assert response.status_code == 400
    assert Incident.objects.count() == 0


def test_oversized_body_is_413_before_anything_else() -> None:
    payload = am_payload()
    payload["commonAnnotations"] = {"pad": "x" * (1024 * 1024)}
    data = body(payload)
    assert len(data) > 1024 * 1024
    # No token at all: the size is checked first, so not even the credentials are looked at.
    response = post(AM, data)
    assert response.status_code == 413
    assert "1 MiB" in response.json()["detail"]


def test_body_of_exactly_the_limit_is_read(am_token: IssuedToken) -> None:
    payload = copy.deepcopy(am_payload())
    base = len(body(payload))
    payload["commonAnnotations"] = {"pad": ""}
    pad = 1024 * 1024 - len(body(payload))
    payload["commonAnnotations"]["pad"] = "x" * pad
    data = body(payload)
    assert len(data) == 1024 * 1024
    assert base < len(data)
    assert post(AM, data, **bearer(am_token)).status_code == 202


def test_command_issues_a_token_once(capsys: pytest.CaptureFixture[str]) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    call_command("create_intake_token", "am-prod", "--source", "alertmanager", "--hmac")
    out = capsys.readouterr().out
    token = out.split("token: ", 1)[1].split()[0]
    secret = out.split("hmac secret: ", 1)[1].split()[0]
    data = body(am_payload())
    assert post(AM, data, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 202
    assert post(AM, data, HTTP_X_ROOTLINE_SIGNATURE=sign(secret, data)).status_code == 202
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_intake_token", "am-prod", "--source", "generic")
    assert issue_token("other", "generic").hmac_secret is None
