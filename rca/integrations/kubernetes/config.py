"""The Kubernetes API server's configuration: `KUBERNETES_URL` (unset: off), `KUBERNETES_TOKEN` (a bearer
token) and `KUBERNETES_NAMESPACES` (comma-separated namespaces whose events, Services and workloads are read;
`default`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar, Self

from rca import env
from rca.integrations.config import BackendConfig

NAMESPACES_ENV = "KUBERNETES_NAMESPACES"


@dataclass(frozen=True)
class KubernetesConfig(BackendConfig):
    """Where the API server is, how to authenticate, and (as the `namespaces` option) what to read."""

    name: ClassVar[str] = "kubernetes"

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """KUBERNETES_URL, KUBERNETES_TOKEN and KUBERNETES_NAMESPACES."""
        return (*super().env_names(), NAMESPACES_ENV)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self | None:
        """The URL and token as for every backend, and the namespaces (`default` when unset)."""
        config = super().from_env(environ)
        if config is None:
            return None
        spaces = env.text(environ, NAMESPACES_ENV) or "default"
        return replace(config, options={"namespaces": [n.strip() for n in spaces.split(",") if n.strip()]})
