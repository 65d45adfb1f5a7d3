#!/usr/bin/env python3
"""Django's command-line utility for Rootline."""

import os
import sys


def main() -> None:
    """Validate the environment, then hand over to Django."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rca.settings")
    from rca.config import ConfigError, load_config, local_secret_key

    # As `dev.py run` does: without SECRET_KEY, the key kept in var/secret_key (made on first use), so
    # commands run by hand share the running app's key (an intake token's HMAC secret derives from it).
    if not os.environ.get("SECRET_KEY", "").strip():
        os.environ["SECRET_KEY"] = local_secret_key(os.environ)

    try:
        load_config()
    except ConfigError as exc:
        sys.stderr.write(f"rootline: configuration error: {exc}\n")
        raise SystemExit(2) from None
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
