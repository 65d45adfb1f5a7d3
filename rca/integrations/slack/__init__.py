"""Slack: notifications through an incoming webhook."""
