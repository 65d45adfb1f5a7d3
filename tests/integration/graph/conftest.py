"""Graph tests run against the session's ArcadeDB (over Bolt, the `graph` fixture of tests/conftest.py)
and the test PostgreSQL database."""
