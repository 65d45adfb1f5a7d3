#!/usr/bin/env python3
"""Django's command-line utility for Rootline."""

import os
import sys


def main() -> None:
    """Validate the environment, then hand over to Django."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rca.settings")
    from rca.config import ConfigError, load_config

    try:
        load_config()
    except ConfigError as exc:
        sys.stderr.write(f"rootline: configuration error: {exc}\n")
        raise SystemExit(2) from None
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
