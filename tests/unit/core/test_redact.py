from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rca.core.redact import ELLIPSIS, one_line, redact, strip_recon, summarize

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nq0Zx9s2\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "secret", "placeholder"),
    [
        ("Authorization: Bearer abcdefghijklmnop1234", "abcdefghijklmnop1234", "<redacted>"),
        ("curl -H 'authorization: token ghx9aa8bb7cc6dd5'", "ghx9aa8bb7cc6dd5", "<redacted>"),
        ("sent bearer Zm9vYmFyYmF6cXV4 upstream", "Zm9vYmFyYmF6cXV4", "bearer <redacted>"),
        ("Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy", "Basic <redacted>"),
        ("Cookie: session=abc123; theme=dark", "abc123", "Cookie: <redacted>"),
        ("token=" + JWT, JWT, "token=<redacted>"),
        ("jwt " + JWT + " expired", JWT, "<jwt>"),
        ("key sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "<api-key>"),
        (
            "GITHUB_TOKEN ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "<api-key>",
        ),
        ("aws AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "<api-key>"),
        ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij", "<api-key>"),
        ("postgres://archives:s3cr3t@db:5432/app", "s3cr3t", "postgres://<credentials>@db"),
        ("redis://:hunter2@cache:6379/0", "hunter2", "<credentials>@"),
        ("password=hunter2 user=ops", "hunter2", "password=<redacted>"),
        ('{"db_password": "correct horse battery"}', "correct horse", '"db_password": "<redacted>"'),
        ("client_secret: 'x y z'", "x y z", "client_secret: '<redacted>'"),
        ("API_KEY=abc123def&x=1", "abc123def", "API_KEY=<redacted>&"),
        (PEM + " trailing", "MIIEowIBAAKCAQEA7bq", "<private-key> trailing"),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg (truncated", "MIIEvQIBADANBg", "<private-key>"),
        ("mail Jane.Doe+ops@example.co.uk now", "Jane.Doe+ops@example.co.uk", "<email>"),
        ("client 192.168.10.200 connected", "192.168.10.200", "<ip>"),
        ("listen [2001:db8::8a2e:370:7334]:443", "2001:db8::8a2e:370:7334", "[<ip>]:443"),
        ("link fe80::1ff:fe23:4567:890a%eth0 up", "fe80::1ff:fe23:4567:890a", "<ip>"),
        ("mapped ::ffff:10.0.0.1 ok", "10.0.0.1", "<ip>"),
        ("card 4111 1111 1111 1111 declined", "4111 1111 1111 1111", "<card>"),
        ("card 5500-0000-0000-0004", "5500-0000-0000-0004", "<card>"),
        ("pan=378282246310005", "378282246310005", "<card>"),
    ],
)
def test_redacts(text, secret, placeholder):
    out = redact(text)
    assert secret not in out
    assert placeholder in out


@pytest.mark.parametrize(
    "text",
    [
        "error_rate: 0.00 over 5m",
        "at 12:34:56 the pod restarted; mac aa:bb:cc:dd:ee:ff",
        "std::vector and a :: separator",
        "ts 1700000000123 trace 4bf92f3577b34da6a3ce929d0e0e4736",  # 13 digits but not Luhn-valid
        "version 1.2.3 of svc; 300.1.2.3 is no address",
        "timeouts=0 user=ops",
        "fe80:zz::1 is not an address",
    ],
)
def test_keeps_harmless_text(text):
    assert redact(text) == text


def test_redact_is_idempotent_on_examples():
    text = f"Bearer abcdefghijkl {JWT} bob@x.io 10.0.0.1 password=x 4111111111111111"
    once = redact(text)
    assert redact(once) == once


def test_strip_recon_replaces_pod_names_and_uuids():
    text = "pod archives-api-7c9d6b8f5-2x8kq and ds fluent-bit-7x2kq req 123e4567-e89b-12d3-a456-426614174000"
    assert strip_recon(text) == "pod <pod> and ds <pod> req <uuid>"
    assert strip_recon("error-count and check-point") == "error-count and check-point"


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("a\nb\r\n\tc  d", 280, "a b c d"),
        ("  padded  ", 280, "padded"),
        ("x\x00y\u2028z", 280, "x y z"),
        ("abcdef", 6, "abcdef"),
        ("abcdefg", 6, "abcde" + ELLIPSIS),
        ("abc   defg", 5, "abc" + ELLIPSIS),
        ("", 280, ""),
    ],
)
def test_one_line(text, limit, expected):
    assert one_line(text, limit) == expected


def test_one_line_rejects_a_zero_limit():
    with pytest.raises(ValueError):
        one_line("x", 0)


@settings(max_examples=400)
@given(st.text(), st.integers(1, 400))
def test_one_line_is_single_and_bounded(text, limit):
    out = one_line(text, limit)
    assert len(out) <= limit
    assert out == " ".join(out.split())  # one line, no control characters, no runs of spaces
    assert all(ch.isprintable() for ch in out)


# Planted secrets: each generated secret is embedded in generated noise and must vanish.
_alnum = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=12, max_size=40
)
_b64url = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=8, max_size=40
)


def _luhn_complete(prefix: str) -> str:
    for check in "0123456789":
        digits = prefix + check
        total = sum(
            (int(c) * 2 - 9 if int(c) * 2 > 9 else int(c) * 2) if i % 2 else int(c)
            for i, c in enumerate(reversed(digits))
        )
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


secrets = st.one_of(
    _alnum.map(lambda s: ("Authorization: Bearer " + s, s)),
    _alnum.map(lambda s: ("password=" + s, s)),
    _alnum.map(lambda s: ('"api_key": "' + s + '"', s)),
    _alnum.map(lambda s: ("https://deploy:" + s + "@git.example.org/repo", s)),
    _alnum.map(lambda s: ("ghp_" + s + "abcdefghij", "ghp_" + s)),
    _alnum.map(lambda s: ("sk-ant-" + s + "abcdefgh", "sk-ant-" + s)),
    st.tuples(_b64url, _b64url).map(lambda p: (f"eyJ{p[0]}.eyJ{p[1]}.sig", f"eyJ{p[0]}.eyJ{p[1]}")),
    _alnum.map(lambda s: (f"-----BEGIN EC PRIVATE KEY-----\n{s}\n-----END EC PRIVATE KEY-----", s)),
    st.from_regex(r"[a-z]{3,10}\.[a-z]{2,8}@[a-z]{3,10}\.(com|org|io)", fullmatch=True).map(lambda s: (s, s)),
    st.tuples(*[st.integers(1, 254)] * 4).map(lambda t: (".".join(map(str, t)), ".".join(map(str, t)))),
    st.ip_addresses(v=6).map(lambda a: (str(a), str(a))).filter(lambda p: ":" in p[0] and p[0] != "::"),
    st.from_regex(r"4[0-9]{14}", fullmatch=True).map(_luhn_complete).map(lambda s: (s, s)),
)
noise = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40).map(
    lambda s: "".join(ch if not (ch.isalnum() or ch in "@:.-_/+=%") else " " for ch in s)
)


@settings(max_examples=500)
@given(noise, secrets, noise)
def test_fuzz_planted_secrets_never_survive(before, planted, after):
    text, secret = planted
    out = redact(f"{before} {text} {after}")
    assert secret not in out
    assert secret not in summarize(f"{before}\n{text}\n{after}")


@settings(max_examples=500)
@given(st.text())
def test_fuzz_redact_never_raises(text):
    assert isinstance(redact(text), str)
    assert len(summarize(text)) <= 280
