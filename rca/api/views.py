"""HTTP views of the API. Thin: validate the request, call a service, shape the answer.

Every view needs a user with the viewer role at least (`REST_FRAMEWORK` defaults), except the intake
webhooks (a per-source intake token) and health (open, like /healthz). Decisions (approve, reject,
re-run) are checked by `rca.incidents.approvals`, which also audits every attempt; comments by
`rca.incidents.comments`, which audits each comment and each refused one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, ClassVar, NoReturn

from django.conf import settings
from django.db import DataError, OperationalError
from django.db.models import Count, Prefetch, QuerySet
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, Throttled, UnsupportedMediaType
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from typing_extensions import override

from rca.api import serializers as s
from rca.api.authentication import IntakeTokenAuthentication
from rca.api.errors import PayloadTooLarge, ServiceUnavailable, validation_error
from rca.api.permissions import IsIntakeSender
from rca.api.throttling import IntakeFailureThrottle, IntakeTokenThrottle
from rca.core.actions import ActionTier
from rca.health import run_checks
from rca.incidents import approvals, listing, workflow
from rca.incidents.approvals import ApprovalError
from rca.incidents.comments import CommentError, add_comment, comments_of
from rca.incidents.intake import (
    IntakeError,
    IntakeResult,
    ingest_alertmanager,
    ingest_generic,
    is_lock_conflict,
)
from rca.incidents.models import (
    ActionProposal,
    Comment,
    Hypothesis,
    Incident,
    IntakeSource,
    IntakeToken,
    Investigation,
)
from rca.incidents.serializers import AlertmanagerPayloadSerializer, GenericAlertSerializer
from rca.incidents.workflow import WorkflowError

log = logging.getLogger(__name__)

MAX_INTAKE_BODY = 1024 * 1024  # 1 MiB; Alertmanager batches are far smaller

ERRORS = {
    400: OpenApiResponse(s.ErrorSerializer, description="Invalid input: `errors` names each field."),
    401: OpenApiResponse(s.ErrorSerializer, description="Not authenticated."),
    403: OpenApiResponse(s.ErrorSerializer, description="Authenticated without the role this needs."),
    404: OpenApiResponse(s.ErrorSerializer, description="No such object."),
    413: OpenApiResponse(s.ErrorSerializer, description="Body over 1 MiB (refused before it is read)."),
    415: OpenApiResponse(s.ErrorSerializer, description="The body is not declared as JSON."),
    429: OpenApiResponse(
        s.ErrorSerializer,
        description="Over the intake rate limit of this token, or of this address's failed "
        "authentications; `Retry-After` says in how many seconds to try again.",
    ),
    503: OpenApiResponse(
        s.ErrorSerializer,
        description="The database is overloaded or unreachable; nothing was stored. `Retry-After` says "
        "when to send the same delivery again (intake is idempotent).",
    ),
}


def _errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: ERRORS[code] for code in codes}


# A decision's or comment's body in a media type no parser reads, or one that fails to parse as it
# says (DRF's parsers: JSON, form, multipart).
UNREADABLE_BODY = {
    415: OpenApiResponse(s.ErrorSerializer, description="The body is not JSON, form or multipart data.")
}
# A list's `?page=` past the last page, or not a positive number (DRF's page-number pagination).
NO_SUCH_PAGE = {404: OpenApiResponse(s.ErrorSerializer, description="No such page.")}


def _query(serializer_class: type[serializers.Serializer[Any]], request: Request) -> dict[str, Any]:
    """Validated query parameters (400 naming the parameter otherwise)."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# --- health ----------------------------------------------------------------------------------------


def health_report() -> tuple[dict[str, Any], int]:
    """Each dependency as ok / down with the reason; 200 only when all are ok, else 503."""
    checks = run_checks()
    healthy = all(c.ok for c in checks)
    body = {
        "status": "ok" if healthy else "down",
        "checks": {c.name: {"status": "ok" if c.ok else "down", "detail": c.detail} for c in checks},
    }
    return body, 200 if healthy else 503


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Each dependency as ok / down with the reason; 200 only when all are ok, else 503."""
    body, code = health_report()
    return JsonResponse(body, status=code)


class HealthView(APIView):
    """`/api/v1/health/`: the same report as `/healthz`, open to load balancers and probes."""

    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(
        responses={200: s.HealthSerializer, 503: s.HealthSerializer}, auth=[], summary="Dependency health"
    )
    def get(self, request: Request) -> Response:
        """Database, broker, graph and vector store: ok, or down with the reason (503)."""
        body, code = health_report()
        return Response(body, status=code)


# --- intake ----------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_json(body: bytes) -> Any:
    """The JSON document in `body`; raises ValueError for anything PostgreSQL's jsonb would refuse too."""
    try:
        payload = json.loads(body, parse_constant=_reject_constant)  # NaN / Infinity: not JSON
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    # jsonb cannot hold U+0000, and no UTF-8 text can hold a lone surrogate (JSON's "\ud800" escape):
    # refuse them here rather than fail on insert or on echoing them back. Iterative: no depth limit.
    stack = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ValueError("NUL characters (\\u0000) are not allowed")
            if not item.isascii():
                try:
                    item.encode()
                except UnicodeEncodeError as exc:
                    raise ValueError(f"a lone surrogate ({item[exc.start]!a}) is not a character") from exc
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return payload


def _is_json(content_type: str) -> bool:
    """application/json, or a JSON-based type (`application/<x>+json`), with any parameters."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class _IntakeView(APIView):
    """A webhook: size check, failed-attempt limit, intake-token authentication, the token's rate limit,
    then the intake service."""

    intake_source: ClassVar[str]
    authentication_classes = [IntakeTokenAuthentication]
    permission_classes = [IsIntakeSender]
    throttle_classes = [IntakeTokenThrottle]
    # The body is read raw: the HMAC covers exactly the bytes received, and the size is checked first.
    parser_classes = []

    def ingest(self, payload: Any) -> IntakeResult:
        raise NotImplementedError

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """Refuse an oversized body (413) before it is read, authenticated or parsed, and a body not
        declared JSON (415); a request whose credentials fail is 401, or 429 once its token (or its
        address, without a token) is over the failed-authentication limit."""
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django then reads no body at all
        if length > MAX_INTAKE_BODY:
            raise PayloadTooLarge(f"Request body is {length} bytes; the limit is {MAX_INTAKE_BODY} (1 MiB).")
        content_type = request.META.get("CONTENT_TYPE", "")
        if not _is_json(content_type):
            raise UnsupportedMediaType(
                content_type or "(none)",
                f"The {self.intake_source} webhook takes `Content-Type: application/json`, "
                f"not {content_type or 'a body without a Content-Type'}.",
            )
        try:
            super().initial(request, *args, **kwargs)
        except (AuthenticationFailed, NotAuthenticated):
            # Only a failing request is counted and limited: a valid token is never refused by this.
            failures = IntakeFailureThrottle()
            if not failures.allow_request(request, self):
                raise Throttled(
                    failures.wait(),
                    f"Too many failed intake authentications with this token (or, without one, from this "
                    f"address; limit: {failures.describe()}); the {self.intake_source} webhook answers "
                    "429 until then.",
                ) from None
            failures.record_failure()
            raise

    def throttled(self, request: Request, wait: float | None) -> NoReturn:
        """429 naming the token and the limit it went over (Retry-After comes from `wait`)."""
        limit = IntakeTokenThrottle().describe()
        prefix = request.auth.prefix if isinstance(request.auth, IntakeToken) else "?"
        raise Throttled(
            wait,
            f"Intake rate limit exceeded for token {prefix}... on the {self.intake_source} "
            f"webhook (limit: {limit}).",
        )

    def permission_denied(
        self, request: Request, message: str | None = None, code: str | None = None
    ) -> NoReturn:
        """No credentials at all: 401 saying which ones this webhook takes."""
        if not request.successful_authenticator:
            raise NotAuthenticated(
                f"An intake token for the {self.intake_source} webhook is required: "
                "`Authorization: Bearer <token>` or `X-Rootline-Signature: sha256=<hex HMAC of the body>`."
            )
        super().permission_denied(request, message, code)

    def post(self, request: Request) -> Response:
        try:
            payload = _parse_json(request._request.body)
        except ValueError as exc:
            return validation_error({"body": f"not valid JSON: {exc}"}, "Invalid payload.")
        try:
            result = self.ingest(payload)
        except IntakeError as exc:
            return validation_error(exc.errors, "Invalid payload.")
        except DataError as exc:
            # A value the serializers let through but a column cannot hold: the sender's input, so
            # 400, never 500 (the serializers check every length that reaches a column first).
            return validation_error({"payload": f"a value does not fit: {str(exc).splitlines()[0]}"})
        return Response(asdict(result), status=status.HTTP_202_ACCEPTED)

    def handle_exception(self, exc: Exception) -> Response:
        """A database failure anywhere in the request (token lookup, ingest) is a JSON 503 with
        `Retry-After`, never a 500: lock conflicts were already retried (rca.incidents.intake), or the
        database is down. Nothing was stored; the sender delivers again (Alertmanager does on 5xx)."""
        if isinstance(exc, OperationalError):
            wait = settings.ROOTLINE_RELIABILITY.intake_retry_after_s
            busy = "overloaded" if is_lock_conflict(exc) else "unavailable"
            log.warning("intake answered 503, the database is %s: %s", busy, exc)
            exc = ServiceUnavailable(wait, f"The database is {busy}; nothing was stored. Retry in {wait} s.")
        return super().handle_exception(exc)


class AlertmanagerWebhookView(_IntakeView):
    """`POST /api/v1/webhooks/alertmanager/`: Alertmanager's webhook payload, version 4, verbatim."""

    intake_source = IntakeSource.ALERTMANAGER

    def ingest(self, payload: Any) -> IntakeResult:
        """Store an Alertmanager webhook payload (as Alertmanager sends it)."""
        return ingest_alertmanager(payload)

    @extend_schema(
        request={"application/json": AlertmanagerPayloadSerializer},
        responses={202: s.IntakeResultSerializer, **_errors(400, 401, 413, 415, 429, 503)},
        summary="Alertmanager webhook (payload version 4)",
    )
    def post(self, request: Request) -> Response:
        """Store the alerts; open, join or resolve incidents; queue investigations of new ones."""
        return super().post(request)


class GenericWebhookView(_IntakeView):
    """`POST /api/v1/webhooks/generic/`: one alert in Rootline's canonical JSON form."""

    intake_source = IntakeSource.GENERIC

    def ingest(self, payload: Any) -> IntakeResult:
        """Store a generic webhook payload."""
        return ingest_generic(payload)

    @extend_schema(
        request={"application/json": GenericAlertSerializer},
        responses={202: s.IntakeResultSerializer, **_errors(400, 401, 413, 415, 429, 503)},
        summary="Generic JSON alert",
    )
    def post(self, request: Request) -> Response:
        """Store the alert; open, join or resolve its incident; queue an investigation of a new one."""
        return super().post(request)


# --- incidents and investigations --------------------------------------------------------------------


_WORKFLOW_REFUSED = {
    403: OpenApiResponse(s.ErrorSerializer, description="Refused: only a responder or approver (audited)."),
    409: OpenApiResponse(s.ErrorSerializer, description="Refused: the incident's state does not allow it."),
}


@extend_schema_view(
    list=extend_schema(
        parameters=[s.IncidentFilterSerializer],
        responses={200: s.IncidentListSerializer(many=True), **_errors(400, 401, 403), **NO_SUCH_PAGE},
    ),
    retrieve=extend_schema(responses={200: s.IncidentDetailSerializer, **_errors(401, 403, 404)}),
)
class IncidentViewSet(viewsets.ReadOnlyModelViewSet[Incident]):
    """Incidents, newest first; the detail has the alerts, the latest investigation and the comments;
    comments are listed (viewer) and added (responder or approver) under `comments/`."""

    lookup_value_regex = r"\d+"

    @override
    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        by_action: dict[str, type[serializers.BaseSerializer[Any]]] = {
            "retrieve": s.IncidentDetailSerializer,
            "comments": s.CommentSerializer,
            "alerts": s.AlertSerializer,
        }
        return by_action.get(self.action or "", s.IncidentListSerializer)

    @override
    def get_queryset(self) -> QuerySet[Incident]:
        if self.action in ("comments", "alerts"):
            return Incident.objects.all()  # only the 404 check: no annotations needed
        if self.action == "list":
            f = _query(s.IncidentFilterSerializer, self.request)
            ordering = f.pop("ordering", listing.DEFAULT_SORT)
            return listing.incidents(listing.IncidentFilters(**f), ordering)
        incidents = listing.annotated().order_by("-created_at", "-id")
        if self.action == "retrieve":
            return incidents.annotate(alert_count=Count("alerts", distinct=True)).prefetch_related(
                Prefetch(
                    "investigations",
                    Investigation.objects.order_by("-created_at", "-id").prefetch_related("hypotheses"),
                ),
                Prefetch("comments", Comment.objects.select_related("author").order_by("created_at", "id")),
            )
        return incidents

    def _workflow(self, change: Callable[[Incident], object]) -> Response:
        """Apply a workflow change (rca.incidents.workflow checks the role and the state, and audits)
        and answer with the incident as it now is."""
        incident = self.get_object()
        try:
            change(incident)
        except WorkflowError as exc:
            if exc.code == WorkflowError.INVALID:
                return validation_error({exc.field: exc.message})
            code = (
                status.HTTP_403_FORBIDDEN if exc.code == WorkflowError.FORBIDDEN else status.HTTP_409_CONFLICT
            )
            return Response({"detail": exc.message, "code": exc.code}, status=code)
        return Response(s.IncidentListSerializer(self.get_queryset().get(pk=incident.pk)).data)

    @extend_schema(
        request=None,
        responses={200: s.IncidentListSerializer, **_errors(401, 404), **_WORKFLOW_REFUSED},
        summary="Acknowledge an incident",
        description="Mark an open or investigating incident as taken (responder or approver), once; "
        "audited as `incident.acknowledged`.",
    )
    @action(detail=True, methods=["post"])
    def acknowledge(self, request: Request, pk: str | None = None) -> Response:
        """Acknowledge the incident (responder or approver)."""
        return self._workflow(lambda incident: workflow.acknowledge(incident, request.user))

    @extend_schema(
        request=s.AssignSerializer,
        responses={
            200: s.IncidentListSerializer,
            **_errors(400, 401, 404),
            **_WORKFLOW_REFUSED,
            **UNREADABLE_BODY,
        },
        summary="Assign an incident",
        description="Make an active responder or approver own the incident, or nobody (null); "
        "audited as `incident.assigned` with the previous and the new owner.",
    )
    @action(detail=True, methods=["post"])
    def assign(self, request: Request, pk: str | None = None) -> Response:
        """Assign the incident to a user, or to nobody (responder or approver)."""
        body = s.AssignSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._workflow(
            lambda incident: workflow.assign(incident, request.user, body.validated_data["assignee"])
        )

    @extend_schema(
        request=s.NoteSerializer,
        responses={
            200: s.IncidentListSerializer,
            **_errors(400, 401, 404),
            **_WORKFLOW_REFUSED,
            **UNREADABLE_BODY,
        },
        summary="Resolve an incident",
        description="Resolve an open or investigating incident by hand, with an optional note; audited "
        "as `incident.resolved`.",
    )
    @action(detail=True, methods=["post"])
    def resolve(self, request: Request, pk: str | None = None) -> Response:
        """Resolve the incident (responder or approver)."""
        return self._noted(request, workflow.resolve)

    def _noted(self, request: Request, change: Callable[[Incident, Any, str], object]) -> Response:
        """A workflow change that takes an optional note (resolve, reopen)."""
        body = s.NoteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._workflow(lambda incident: change(incident, request.user, body.validated_data["note"]))

    @extend_schema(
        request=s.NoteSerializer,
        responses={
            200: s.IncidentListSerializer,
            **_errors(400, 401, 404),
            **_WORKFLOW_REFUSED,
            **UNREADABLE_BODY,
        },
        summary="Reopen an incident",
        description="Reopen a resolved incident (its acknowledgement cleared), unless its alert group has "
        "another active incident; audited as `incident.reopened`.",
    )
    @action(detail=True, methods=["post"])
    def reopen(self, request: Request, pk: str | None = None) -> Response:
        """Reopen the incident (responder or approver)."""
        return self._noted(request, workflow.reopen)

    @extend_schema(
        responses={200: s.AlertSerializer(many=True), **_errors(401, 403, 404)},
        summary="List an incident's alerts",
        description="Every alert of the incident by firing time, paginated (`?page=`, `?page_size=`).",
    )
    @action(detail=True, methods=["get"])
    def alerts(self, request: Request, pk: str | None = None) -> Response:
        """The incident's alerts by firing time, a page at a time."""
        alerts = self.get_object().alerts.order_by("starts_at", "id")
        page = self.paginator.paginate_queryset(alerts, request, self) if self.paginator else None
        if page is None:
            return Response(s.AlertSerializer(alerts, many=True).data)
        return self.get_paginated_response(s.AlertSerializer(page, many=True).data)

    @extend_schema(
        methods=["GET"],
        responses={200: s.CommentSerializer(many=True), **_errors(401, 403, 404)},
        summary="List an incident's comments",
        description="The incident's comments, oldest first: plain text, to be shown escaped.",
    )
    @extend_schema(
        methods=["POST"],
        request=s.NewCommentSerializer,
        responses={
            201: s.CommentSerializer,
            **_errors(400, 401, 404),
            **UNREADABLE_BODY,
            403: OpenApiResponse(
                s.ErrorSerializer, description="Refused: only a responder or approver may comment (audited)."
            ),
        },
        summary="Comment on an incident",
        description="Add a comment (responder or approver); audited as `incident.commented`. Comments "
        "cannot be edited or deleted.",
    )
    @action(detail=True, methods=["get", "post"])
    def comments(self, request: Request, pk: str | None = None) -> Response:
        """GET: the incident's comments, oldest first (paginated). POST: add one (responder or
        approver); audited. Comments cannot be edited or deleted."""
        incident = self.get_object()
        if request.method == "GET":
            # The viewset's paginator, called directly: `paginate_queryset` is typed for incidents.
            comments = comments_of(incident)
            page = self.paginator.paginate_queryset(comments, request, self) if self.paginator else None
            if page is None:
                return Response(s.CommentSerializer(comments, many=True).data)
            return self.get_paginated_response(s.CommentSerializer(page, many=True).data)
        body = s.NewCommentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            comment = add_comment(incident, request.user, body.validated_data["body"])
        except CommentError as exc:
            if exc.code == CommentError.FORBIDDEN:
                return Response({"detail": exc.message, "code": exc.code}, status=status.HTTP_403_FORBIDDEN)
            return validation_error({exc.field: exc.message})
        return Response(s.CommentSerializer(comment).data, status=status.HTTP_201_CREATED)


def _refused(exc: ApprovalError) -> Response:
    """The HTTP answer to a refused decision: who may not (403), bad input (400), wrong state (409)."""
    code = {
        ApprovalError.FORBIDDEN: status.HTTP_403_FORBIDDEN,
        ApprovalError.REASON_REQUIRED: status.HTTP_400_BAD_REQUEST,
    }.get(exc.code, status.HTTP_409_CONFLICT)
    body: dict[str, Any] = {"detail": exc.message, "code": exc.code, **exc.detail}
    if exc.code == ApprovalError.REASON_REQUIRED:
        body["errors"] = {"reason": exc.message}
    return Response(body, status=code)


_REFUSED = {
    403: OpenApiResponse(s.ErrorSerializer, description="Refused: the user lacks the role (audited)."),
    409: OpenApiResponse(
        s.ErrorSerializer,
        description="Refused: wrong state, above the allowed tier, or the action cannot be built.",
    ),
}


@extend_schema_view(
    retrieve=extend_schema(responses={200: s.InvestigationDetailSerializer, **_errors(401, 403, 404)})
)
class InvestigationViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet[Investigation]):
    """An investigation: gate decision, hypotheses and evidence, path, chain, grounding, confidence, tier."""

    lookup_value_regex = r"\d+"
    serializer_class = s.InvestigationDetailSerializer
    queryset = Investigation.objects.prefetch_related(
        Prefetch("hypotheses", queryset=Hypothesis.objects.prefetch_related("evidence")),
        Prefetch("proposals", queryset=ActionProposal.objects.select_related("investigation", "decided_by")),
    )

    @extend_schema(
        request=s.RerunRequestSerializer,
        responses={202: s.RerunSerializer, **_errors(400, 401, 404), **_REFUSED, **UNREADABLE_BODY},
    )
    @action(detail=True, methods=["post"])
    def rerun(self, request: Request, pk: str | None = None) -> Response:
        """Queue a new investigation of the same incident (responder or approver), optionally applying
        this investigation's recovery guidance."""
        body = s.RerunRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            new = approvals.request_rerun(
                self.get_object(), request.user, body.validated_data["apply_guidance"]
            )
        except ApprovalError as exc:
            return _refused(exc)
        return Response(
            {"investigation": new.pk, "incident": new.incident_id, "status": new.status},
            status=status.HTTP_202_ACCEPTED,
        )


# --- actions -----------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        parameters=[s.ActionFilterSerializer],
        responses={200: s.ActionProposalSerializer(many=True), **_errors(400, 401, 403), **NO_SUCH_PAGE},
    ),
    retrieve=extend_schema(responses={200: s.ActionDetailSerializer, **_errors(401, 403, 404)}),
)
class ActionViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[ActionProposal]
):
    """Proposed actions; approve (approver) or reject (responder) them with a reason."""

    lookup_value_regex = r"\d+"

    @override
    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        by_action: dict[str, type[serializers.BaseSerializer[Any]]] = {
            "retrieve": s.ActionDetailSerializer,
            "approve": s.ApproveSerializer,
            "reject": s.RejectSerializer,
        }
        return by_action.get(self.action or "", s.ActionProposalSerializer)

    @override
    def get_queryset(self) -> QuerySet[ActionProposal]:
        actions = ActionProposal.objects.select_related("investigation", "decided_by").order_by(
            "-created_at", "-id"
        )
        if self.action != "list":
            return actions
        f = _query(s.ActionFilterSerializer, self.request)
        for param, lookup in (
            ("status", "status"),
            ("tier", "tier"),
            ("incident", "investigation__incident"),
        ):
            if param in f:
                actions = actions.filter(**{lookup: f[param]})
        return actions

    def _decided(self, proposal: ActionProposal) -> Response:
        return Response(s.ActionDetailSerializer(proposal).data)

    @extend_schema(
        request=s.ApproveSerializer,
        responses={200: s.ActionDetailSerializer, **_errors(400, 401, 404), **_REFUSED, **UNREADABLE_BODY},
    )
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        """Approve at the tier proposed or a lower one; refused above `allowed_tier`, or twice."""
        proposal = self.get_object()
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        tier = body.validated_data.get("tier")
        try:
            approvals.approve(
                proposal, request.user, body.validated_data["reason"], ActionTier(tier) if tier else None
            )
        except ApprovalError as exc:
            return _refused(exc)
        return self._decided(proposal)

    @extend_schema(
        request=s.RejectSerializer,
        responses={200: s.ActionDetailSerializer, **_errors(400, 401, 404), **_REFUSED, **UNREADABLE_BODY},
    )
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        """Reject with a reason (responder or approver)."""
        proposal = self.get_object()
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            approvals.reject(proposal, request.user, body.validated_data["reason"])
        except ApprovalError as exc:
            return _refused(exc)
        return self._decided(proposal)


# --- search ------------------------------------------------------------------------------------------


class SearchView(APIView):
    """`GET /api/v1/search/`: past incidents most similar in meaning to `q`, restricted by filters."""

    @extend_schema(
        parameters=[s.SearchQuerySerializer],
        responses={
            200: s.SearchResultSerializer,
            **_errors(400, 401, 403),
            503: OpenApiResponse(s.ErrorSerializer, description="Incident memory is unavailable."),
        },
        summary="Search past incidents",
    )
    def get(self, request: Request) -> Response:
        """Results come from incident memory (Qdrant), each checked against the incident rows."""
        # Imported here: search pulls in Qdrant and the embedding model, which no other view needs.
        from rca.memory import index

        q = _query(s.SearchQuerySerializer, request)
        filters = index.SearchFilters(
            service=q.get("service"),
            fault_kind=q.get("fault_kind"),
            tier=q.get("tier"),
            exit=q.get("exit"),
            since=q.get("since"),
            until=q.get("until"),
        )
        try:
            hits = index.search(q["q"], filters, q["limit"])
        except index.MemoryUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        statuses = dict(
            Incident.objects.filter(pk__in=[h.incident_id for h in hits]).values_list("pk", "status")
        )
        results = [
            {
                "incident": hit.incident_id,
                "score": round(hit.score, 4),
                "title": hit.document.title,
                "status": statuses[hit.incident_id],
                "symptom_entity": hit.document.symptom_entity,
                "services": list(hit.document.services),
                "root_cause_entity": hit.document.root_cause_entity,
                "fault_kind": hit.document.fault_kind,
                "tier": hit.document.tier,
                "exit": hit.document.exit,
                "evidence": list(hit.document.evidence),
                "onset": hit.document.onset,
            }
            # Memory may still hold an incident deleted since it was indexed: never show a dead link.
            for hit in hits
            if hit.incident_id in statuses
        ]
        return Response(s.SearchResultSerializer({"query": q["q"], "results": results}).data)


# --- docs --------------------------------------------------------------------------------------------


class DocsView(SpectacularSwaggerSplitView):
    """Swagger UI from local assets, its init script a separate file: nothing inline, nothing off-host."""

    template_name = "api/swagger_ui.html"
