"""docker-compose.yml cannot run here (no Docker engine), so its structure is checked instead."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_services_and_health_checks() -> None:
    services = COMPOSE["services"]
    assert {"postgres", "redis", "neo4j", "qdrant", "web", "worker"} <= set(services)
    for name in ("postgres", "redis", "neo4j", "qdrant", "web", "worker"):
        assert "test" in services[name]["healthcheck"], name
    assert services["neo4j"]["image"].startswith("neo4j:5")


def test_volumes_are_declared_and_used() -> None:
    declared = set(COMPOSE["volumes"])
    used = {
        v.split(":", 1)[0]
        for s in COMPOSE["services"].values()
        for v in s.get("volumes", [])
        if not v.startswith((".", "/"))
    }
    assert used == declared


def test_app_env_wiring_and_loopback_ports() -> None:
    env = COMPOSE["services"]["web"]["environment"]
    for var in (
        "DATABASE_URL",
        "REDIS_URL",
        "NEO4J_URI",
        "NEO4J_USER",
        "NEO4J_PASSWORD",
        "QDRANT_URL",
        "SECRET_KEY",
    ):
        assert var in env, var
    assert env["NEO4J_URI"] == "bolt://neo4j:7687"
    assert COMPOSE["services"]["worker"]["environment"] == env
    for service in COMPOSE["services"].values():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), port


def test_the_app_processes_are_started_again_when_they_end() -> None:
    # A worker deaf to its queues ends itself (rca.heartbeats); only a restart policy brings it back.
    for name in ("web", "worker", "beat"):
        assert COMPOSE["services"][name]["restart"] == "unless-stopped", name
