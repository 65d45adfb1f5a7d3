"""Redaction of secrets and personal data, and bounded one-line summaries.

``redact`` runs on anything that is stored or sent to a model. ``strip_recon`` additionally
removes workload identifiers that have reconnaissance value (pod names, UUIDs); it is applied
to evidence summaries only, because an investigating model still needs pod names in tool results.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

SUMMARY_LIMIT = 280
ELLIPSIS = "…"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
    re.DOTALL,
)
# scheme://user:password@host -> the whole userinfo goes (a user name is personal data too).
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:]*:[^\s/@]*@")
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*[\"']?)(?:(bearer|basic|digest|token|negotiate)\s+)?[^\s\"',;]+"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_COOKIE = re.compile(r"(?im)\b((?:set-)?cookie\s*:\s*)[^\n]+")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_API_KEY = re.compile(
    r"\b(?:sk-(?:ant-)?[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35})"
)
_SENSITIVE_KEY_WORDS = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key"
    r"|private[_-]?key|credentials?|session[_-]?id|sessionid|client[_-]?secret|signature"
)
# key=value, key: value and "key": "value" where the key names a secret; quoted values may hold spaces.
_SECRET_PAIR = re.compile(
    rf"(?i)(\b[\w.-]*(?:{_SENSITIVE_KEY_WORDS})[\w.-]*[\"']?\s*[:=]\s*)"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;&}\]]+)"
)
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_IPV6_CANDIDATE = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?:%[\w.]+)?(?![\w:])"
)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?![\w]|\.\d)")
_CARD_CANDIDATE = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")

# Kubernetes generated names: <owner>-<replicaset hash>-<suffix> and <owner>-<suffix>, both drawn
# from the vowel-free alphabet Kubernetes uses for generated names.
_K8S_CHARS = "[bcdfghjklmnpqrstvwxz2456789]"
_POD = re.compile(
    rf"\b[a-z0-9](?:[a-z0-9-]*[a-z0-9])?-(?:{_K8S_CHARS}{{6,10}}-{_K8S_CHARS}{{5}}|(?=[a-z]*\d){_K8S_CHARS}{{5}})\b"
)
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")


def _ipv6_or_keep(match: re.Match[str]) -> str:
    text = match.group(0)
    address = text.split("%", 1)[0]
    if not any(ch.isalnum() for ch in address):
        return text  # a bare "::" is punctuation far more often than an address
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        return text  # clock times, MAC addresses and the like
    return "<ip>"


def _luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card_or_keep(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = re.sub(r"\D", "", text)
    # Every real payment card number passes the Luhn check; most ids and timestamps do not.
    return "<card>" if _luhn_valid(digits) else text


def _keep_quotes(match: re.Match[str]) -> str:
    value = match.group(2)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{match.group(1)}{quote}<redacted>{quote}"


# Order matters: whole blocks and structured credentials first, so later, broader patterns
# (emails, addresses) never see half of a secret.
_RULES: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (_PRIVATE_KEY, "<private-key>"),
    (_URL_CREDENTIALS, r"\1<credentials>@"),
    (_JWT, "<jwt>"),
    (_AUTH_HEADER, r"\1<redacted>"),
    (_BEARER, r"\1 <redacted>"),
    (_COOKIE, r"\1<redacted>"),
    (_API_KEY, "<api-key>"),
    (_SECRET_PAIR, _keep_quotes),
    (_EMAIL, "<email>"),
    (_IPV6_CANDIDATE, _ipv6_or_keep),
    (_IPV4, "<ip>"),
    (_CARD_CANDIDATE, _card_or_keep),
)


def redact(text: str) -> str:
    """Remove secrets and personal data from ``text``.

    Covers private-key blocks, credentials in URLs, JWTs, authorization headers and bearer or
    basic tokens, cookies, well-known API key shapes, values of secret-named keys (``password=``,
    ``"token": "..."``), email addresses, IPv4 and IPv6 addresses, and Luhn-valid card numbers.
    Each is replaced by a typed placeholder such as ``<email>``; everything else is kept.
    """
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def strip_recon(text: str) -> str:
    """Replace Kubernetes pod names and UUIDs, which have reconnaissance value, by placeholders."""
    return _UUID.sub("<uuid>", _POD.sub("<pod>", text))


def one_line(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """Collapse ``text`` to one line of at most ``limit`` characters (an ellipsis marks a cut).

    Every run of whitespace or control characters becomes one space.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    line = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    if len(line) <= limit:
        return line
    return line[: limit - 1].rstrip() + ELLIPSIS


def summarize(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """The stored form of an evidence summary: redacted, recon-stripped, one bounded line."""
    return one_line(strip_recon(redact(text)), limit)
