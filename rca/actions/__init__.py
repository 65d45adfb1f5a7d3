"""Executors of approved actions (notify, issue, patch, pull request); see `rca.actions.executors`."""
