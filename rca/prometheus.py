"""Rootline's own telemetry for Prometheus, served at `/metrics`.

Everything is read at scrape time from the source of truth (PostgreSQL) and the broker (Redis), not
counted in process memory: the web server, the investigation workers and the memory worker are
separate processes that restart independently, and a count kept in one of them would be a fraction
that resets. The database already holds every investigation, evidence item, alert and token spent.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

# Investigation durations (seconds) are bucketed like this: most finish in seconds, the budget is minutes.
DURATION_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
QUEUES = ("celery", "memory")


class RootlineCollector(Collector):
    """Gate outcomes, investigations, tool calls, durations, model use, intake and queue depth."""

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        """One scrape: a few aggregate queries and one LLEN per queue."""
        from rca.incidents.models import Alert, Evidence, Investigation

        exits = CounterMetricFamily(
            "rootline_gate_outcomes", "Finished investigations by the gate's exit.", labels=["exit"]
        )
        for outcome in (
            Investigation.objects.filter(status=Investigation.Status.SUCCEEDED)
            .values("exit")
            .annotate(n=Count("id"))
        ):
            exits.add_metric([outcome["exit"] or "none"], outcome["n"])
        yield exits

        statuses = GaugeMetricFamily(
            "rootline_investigations", "Investigations by status.", labels=["status"]
        )
        counts = dict(Investigation.objects.values_list("status").annotate(n=Count("id")))
        for status in Investigation.Status.values:
            statuses.add_metric([status], counts.get(status, 0))
        yield statuses

        tools = CounterMetricFamily(
            "rootline_tool_calls", "Evidence-tool calls by tool and verdict.", labels=["tool", "verdict"]
        )
        for call in Evidence.objects.values("tool", "verdict").annotate(n=Count("id")).order_by():
            tools.add_metric([call["tool"], call["verdict"]], call["n"])
        yield tools

        yield _durations()

        used = Investigation.objects.aggregate(
            tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"), cost=Sum("cost_usd")
        )
        tokens = CounterMetricFamily(
            "rootline_model_tokens", "Language-model tokens used by investigations.", labels=["direction"]
        )
        tokens.add_metric(["input"], used["tokens_in"] or 0)
        tokens.add_metric(["output"], used["tokens_out"] or 0)
        yield tokens
        yield CounterMetricFamily(
            "rootline_model_cost_usd",
            "Language-model cost of investigations (USD).",
            value=float(used["cost"] or 0),
        )
        yield from _month()

        alerts = CounterMetricFamily(
            "rootline_alerts_received",
            "Alerts stored by intake (deduplicated), by source.",
            labels=["source"],
        )
        for sent in Alert.objects.values("source").annotate(n=Count("id")).order_by():
            alerts.add_metric([sent["source"]], sent["n"])
        yield alerts

        yield _queue_depth()


def _durations() -> HistogramMetricFamily:
    """Seconds from start to finish of succeeded investigations, as a cumulative histogram (one query)."""
    from rca.incidents.models import Investigation

    took = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    finished = Investigation.objects.filter(
        status=Investigation.Status.SUCCEEDED, started_at__isnull=False, finished_at__isnull=False
    ).annotate(took=took)
    per_bucket = {
        f"le_{i}": Count("id", filter=Q(took__lte=timedelta(seconds=le)))
        for i, le in enumerate(DURATION_BUCKETS)
    }
    row = finished.aggregate(total=Count("id"), seconds=Sum("took"), **per_bucket)
    buckets = [(str(le), row[f"le_{i}"]) for i, le in enumerate(DURATION_BUCKETS)]
    buckets.append(("+Inf", row["total"]))
    family = HistogramMetricFamily(
        "rootline_investigation_duration_seconds", "Wall-clock seconds per succeeded investigation."
    )
    family.add_metric([], buckets, sum_value=row["seconds"].total_seconds() if row["seconds"] else 0.0)
    return family


def _month() -> Iterator[GaugeMetricFamily]:
    """This calendar month's (UTC) model use and the installation's monthly ceiling (one query)."""
    from rca.incidents.investigations import month_spend

    spent, ceiling = month_spend(), settings.ROOTLINE_POLICY
    yield GaugeMetricFamily(
        "rootline_model_month_tokens",
        "Language-model tokens of investigations finished this calendar month (UTC).",
        value=spent.tokens,
    )
    yield GaugeMetricFamily(
        "rootline_model_month_cost_usd",
        "Language-model cost of investigations finished this calendar month (UTC, USD).",
        value=spent.cost_usd,
    )
    yield GaugeMetricFamily(
        "rootline_model_monthly_ceiling_tokens",
        "Monthly token ceiling; at it the Anthropic policy fails closed.",
        value=ceiling.monthly_tokens,
    )
    yield GaugeMetricFamily(
        "rootline_model_monthly_ceiling_cost_usd",
        "Monthly cost ceiling (USD); at it the Anthropic policy fails closed.",
        value=ceiling.monthly_cost_usd,
    )


def _queue_depth() -> GaugeMetricFamily:
    """Messages waiting per Celery queue (Redis LLEN, under the health checks' deadline); no samples
    when the broker can't be reached."""
    from redis.exceptions import RedisError

    from rca.heartbeats import client

    depth = GaugeMetricFamily(
        "rootline_queue_depth", "Messages waiting in each Celery queue.", labels=["queue"]
    )
    conn = client(settings.ROOTLINE_RELIABILITY.health_timeout_s)
    try:
        lengths = [(queue, int(conn.llen(queue))) for queue in QUEUES]
    except (RedisError, OSError):
        return depth  # a scrape never fails on the broker: the series is absent, /healthz says why
    finally:
        conn.close()
    for queue, length in lengths:
        depth.add_metric([queue], length)
    return depth


# No auto-describe: describing would run a scrape's queries when this module is imported.
REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(RootlineCollector())
ProcessCollector(registry=REGISTRY)  # the web process's own memory and CPU


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """`GET /metrics` in the Prometheus text format; with ROOTLINE_METRICS_TOKEN set, only for
    `Authorization: Bearer <that token>`."""
    expected = settings.ROOTLINE_METRICS_TOKEN
    if expected:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), expected.encode()):
            denied = "a bearer token is required for /metrics\n"
            return HttpResponse(denied, status=401, content_type="text/plain")
    try:
        body = generate_latest(REGISTRY)
    except DatabaseError as exc:  # the source of truth is down: say so at once, /healthz says more
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return HttpResponse(f"database unavailable: {reason}\n", status=503, content_type="text/plain")
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
