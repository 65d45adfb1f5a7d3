"""The embedded graph server's command line."""

from __future__ import annotations

from pathlib import Path

from graphstore.launcher import ArcadeServer

PLACE = Path("/srv/graph")


def test_heap_cap_and_extra_jvm_flags_come_before_the_main_class() -> None:
    server = ArcadeServer(
        PLACE, 7688, 2481, "pw", "rootline", heap="256m", jvm_options=("-Xms256m", "-XX:+AlwaysPreTouch")
    )
    command = server.command()
    main = command.index("com.arcadedb.server.ArcadeDBServer")
    assert command.index("-Xmx256m") < command.index("-Xms256m") < command.index("-XX:+AlwaysPreTouch") < main
    assert command[main:] == ["com.arcadedb.server.ArcadeDBServer"]


def test_no_extra_jvm_flags_by_default() -> None:
    command = ArcadeServer(PLACE, 7688, 2481, "pw", "rootline").command()
    assert [flag for flag in command if flag.startswith("-X")] == ["-Xmx768m"]
    assert "-Darcadedb.bolt.host=127.0.0.1" in command  # listens on loopback only
