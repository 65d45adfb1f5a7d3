"""Recorded cases replayed as a live cluster: a Prometheus holding the case's metrics under the conventions
real clusters use, a rule file alerting on the entry service and an Alertmanager routing to Rootline.

`replay.replay_case` is the entry point (`manage.py replay_case`); `docs/live-conventions.md` has the
mapping table. The package reads cases through the recorded loaders only and never reads ground truth.
"""
