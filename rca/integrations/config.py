"""The configuration every HTTP-API integration shares, and how it is read from the environment and from
a settings mapping (`ROOTLINE_LIVE_TELEMETRY`).

A system's own `config.py` subclasses `BackendConfig` with its name (which gives its `<NAME>_URL` and
`<NAME>_TOKEN` variables), and adds what else it reads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

from rca import env

# Keys of a settings mapping that say how to connect, not what the connector does.
CONNECTION_KEYS = frozenset({"url", "token", "username", "password", "timeout", "verify", "ca_cert"})
_CONNECTION_FIELDS = frozenset({"url", "token", "username", "password", "timeout", "verify", "options"})


@dataclass(frozen=True)
class BackendConfig:
    """Where one system's HTTP API lives and how to authenticate; `options` go to its connector."""

    url: str
    token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float | None = None  # None: the caller's default
    verify: bool | str = True  # False, True, or a CA bundle path (in-cluster Kubernetes)
    options: Mapping[str, Any] = field(default_factory=dict)

    name: ClassVar[str]  # the settings key and the name in every error message
    default_url: ClassVar[str] = ""
    headers: ClassVar[Mapping[str, str]] = {}  # sent with every request (API versions, media types)

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """The environment variables this system reads: `<NAME>_URL` (unset: off) and `<NAME>_TOKEN` (a
        bearer token) first, then any a subclass adds."""
        prefix = cls.name.upper()
        return (f"{prefix}_URL", f"{prefix}_TOKEN")

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self | None:
        """The system's configuration from `<NAME>_URL` and `<NAME>_TOKEN`; None when the URL is unset."""
        url_name, token_name = cls.env_names()[:2]
        url = env.url(environ, url_name, None, ("http", "https"))
        if url is None:
            return None
        return cls(url=url, token=env.text(environ, token_name))

    @classmethod
    def own_fields(cls) -> frozenset[str]:
        """Fields a subclass adds (given to its connector, like the options)."""
        return frozenset(f.name for f in fields(cls)) - _CONNECTION_FIELDS

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], accepted: Collection[str]) -> Self:
        """Split a settings mapping into connection fields, own fields, and connector options, which must
        be among `accepted` (a misspelt setting must not silently change nothing)."""
        own = cls.own_fields()
        options = {k: v for k, v in raw.items() if k not in CONNECTION_KEYS | own}
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise ValueError(
                f"{cls.name}: unknown setting(s) {', '.join(unknown)}; "
                f"expected {', '.join(sorted(CONNECTION_KEYS | own | set(accepted)))}"
            )
        return cls(
            url=str(raw.get("url") or cls.default_url),
            token=raw.get("token") or None,
            username=raw.get("username") or None,
            password=raw.get("password") or None,
            timeout=float(raw["timeout"]) if raw.get("timeout") is not None else None,
            verify=raw.get("ca_cert") or raw.get("verify", True),
            options=options,
            **{k: raw[k] for k in own if k in raw},
        )

    def settings(self) -> dict[str, object]:
        """The settings-mapping form, which `from_mapping` reads back."""
        connection: dict[str, object] = {"url": self.url, "token": self.token, "username": self.username}
        connection |= {"password": self.password, "timeout": self.timeout}
        kept = {k: v for k, v in connection.items() if v is not None}
        if self.verify is not True:
            kept["verify"] = self.verify
        return kept | {k: getattr(self, k) for k in sorted(self.own_fields())} | dict(self.options)

    def connector_arguments(self) -> dict[str, Any]:
        """The keyword arguments of the system's connector: its own fields and the options."""
        return {k: getattr(self, k) for k in self.own_fields()} | dict(self.options)
