"""The error an executor raises when an action cannot be carried out as approved."""

from __future__ import annotations


class ActionError(Exception):
    """The action cannot be carried out as approved; the message says why (shown on the page)."""
