"""Page views: parse the request, call the page's reader (`frontend.incident_page`, `lists`,
`action_page`, `explorer_page`, `past_incidents`), `rca.incidents.approvals`
(decisions) or `rca.incidents.comments` (comments), render. Every page needs a signed-in user holding
a role (`frontend.access`); every form carries a CSRF token."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from frontend import action_page, explorer_page, incident_page, integrations, lists, past_incidents
from frontend.access import viewer_required
from frontend.forms import DecisionForm, IncidentFilterForm, SearchForm
from frontend.labels import TIER_LABELS
from rca.core.actions import ActionTier
from rca.health import run_checks
from rca.incidents import listing, workflow
from rca.incidents.approvals import ApprovalError, Role, approve, has_role, reject, request_rerun
from rca.incidents.comments import COMMENT_MAX_LENGTH, CommentError, add_comment
from rca.incidents.models import ActionProposal, Incident, Investigation
from rca.incidents.workflow import WorkflowError, assignable_users

PAGE_SIZE = 25
# A refused decision answers with the status the API uses for the same refusal.
REFUSAL_STATUS = {
    ApprovalError.FORBIDDEN: 403,
    ApprovalError.ABOVE_ALLOWED_TIER: 403,
    ApprovalError.ALREADY_DECIDED: 409,
    ApprovalError.SUPERSEDED: 409,
    ApprovalError.NOT_BUILDABLE: 409,
    ApprovalError.REASON_REQUIRED: 400,
}


@viewer_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The first page is the incident list."""
    return redirect("frontend:incidents")


@viewer_required
@require_GET
def status(request: HttpRequest) -> HttpResponse:
    """The state of Rootline's dependencies (database, broker, graph, vector store)."""
    return render(request, "frontend/status.html", {"checks": run_checks()})


@viewer_required
@require_GET
def integrations_page(request: HttpRequest) -> HttpResponse:
    """Each telemetry backend and action executor: configured or not, reachable or not, and the
    variables that set it."""
    return render(
        request,
        "frontend/integrations.html",
        {"systems": integrations.systems(), "executors": integrations.executors()},
    )


@viewer_required
@require_GET
def incident_list(request: HttpRequest) -> HttpResponse:
    """Incidents with their status, assignee, confidence and tier: filtered, sorted by any column
    (newest first by default) and paginated."""
    form = IncidentFilterForm(request.GET)
    sort = form.sort_key()
    rows = listing.incidents(form.filters(), sort)
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "frontend/incident_list.html",
        {
            "page": page,
            "filters": form.values(),
            "options": lists.filter_options(),
            "headers": lists.headers(query, sort),
            "query": query.urlencode(),
            "tier_labels": TIER_LABELS,
        },
    )


@viewer_required
@require_GET
def action_inbox(request: HttpRequest) -> HttpResponse:
    """The approval inbox: actions awaiting a decision, newest first, with their tier, the tier the
    evidence allows, the confidence and who may decide."""
    page = Paginator(lists.waiting(), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "frontend/inbox.html",
        {
            "page": page,
            "rows": lists.awaiting(page.object_list, request.user),
            "approvers": lists.approvers(),
        },
    )


@viewer_required
@require_GET
def incident_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One incident: its alert, the investigation's progress or conclusion, similar past incidents."""
    incident = get_object_or_404(Incident, pk=pk)
    return _incident_page(request, incident)


def _incident_page(
    request: HttpRequest, incident: Incident, status: int = 200, **extra: object
) -> HttpResponse:
    """The incident page; `extra` adds to its context (a refused comment's error and text)."""
    context = incident_page.detail(incident)
    responder = has_role(request.user, Role.RESPONDER)
    context.update(
        {
            "can_rerun": responder,
            "can_comment": responder,
            "can_change": responder,
            "assignees": list(assignable_users().values_list("username", flat=True)),
            "comment_max_length": COMMENT_MAX_LENGTH,
            **extra,
        }
    )
    return render(request, "frontend/incident_detail.html", context, status=status)


@viewer_required
@require_POST
def incident_comment(request: HttpRequest, pk: int) -> HttpResponse:
    """Add a comment (responder or approver; rca.incidents.comments checks the role and the body and
    audits), then back to the incident page. A refusal re-renders the page with the reason and the
    text typed: 403 for a viewer, 400 for an empty or over-long body."""
    incident = get_object_or_404(Incident, pk=pk)
    body = request.POST.get("body", "")
    try:
        add_comment(incident, request.user, body)
    except CommentError as exc:
        code = 403 if exc.code == CommentError.FORBIDDEN else 400
        return _incident_page(request, incident, code, comment_error=exc.message, comment_body=body)
    messages.success(request, "Comment added.")
    return redirect(reverse("frontend:incident", args=[pk]))


# A refused workflow change answers with the status the API uses for the same refusal.
WORKFLOW_REFUSAL_STATUS = {
    WorkflowError.FORBIDDEN: 403,
    WorkflowError.WRONG_STATE: 409,
    WorkflowError.INVALID: 400,
}
WORKFLOW_DONE = {
    "acknowledge": "Acknowledged.",
    "assign": "Assignment changed.",
    "resolve": "Resolved.",
    "reopen": "Reopened.",
}


@viewer_required
@require_POST
def incident_workflow(request: HttpRequest, pk: int, step: str) -> HttpResponse:
    """Acknowledge, assign, resolve or reopen the incident (rca.incidents.workflow checks the role and
    the state, and audits); a refusal re-renders the page with the reason."""
    incident = get_object_or_404(Incident, pk=pk)
    try:
        if step == "acknowledge":
            workflow.acknowledge(incident, request.user)
        elif step == "assign":
            workflow.assign(incident, request.user, request.POST.get("assignee") or None)
        elif step == "resolve":
            workflow.resolve(incident, request.user, request.POST.get("note", ""))
        else:
            workflow.reopen(incident, request.user, request.POST.get("note", ""))
    except WorkflowError as exc:
        incident.refresh_from_db()
        status = WORKFLOW_REFUSAL_STATUS.get(exc.code, 400)
        return _incident_page(request, incident, status, workflow_error=exc.message)
    messages.success(request, WORKFLOW_DONE[step])
    return redirect(reverse("frontend:incident", args=[pk]))


@viewer_required
@require_POST
def incident_rerun(request: HttpRequest, pk: int) -> HttpResponse:
    """Re-run the incident's latest investigation, optionally applying its recovery guidance (the
    server checks the role and the state, and audits a refusal)."""
    incident = get_object_or_404(Incident, pk=pk)
    latest = incident.investigations.order_by("-created_at", "-pk").first()
    if latest is None:
        messages.error(request, "This incident has no investigation to re-run.")
        return redirect(reverse("frontend:incident", args=[pk]))
    apply_guidance = request.POST.get("apply_guidance") == "1"
    try:
        new = request_rerun(latest, request.user, apply_guidance)
    except ApprovalError as exc:
        messages.error(request, exc.message)
        return redirect(reverse("frontend:incident", args=[pk]))
    how = " applying its recovery guidance" if apply_guidance else ""
    messages.success(request, f"Re-run queued{how} (investigation {new.pk}).")
    return redirect(reverse("frontend:incident", args=[pk]))


@viewer_required
@require_GET
def incident_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """The latest investigation's status and progress, polled by the detail page while it runs."""
    incident = get_object_or_404(Incident, pk=pk)
    response = JsonResponse(incident_page.progress(incident))
    response["Cache-Control"] = "no-store"
    return response


@viewer_required
@require_GET
def explorer(request: HttpRequest, pk: int) -> HttpResponse:
    """The explanatory graph and the metrics timeline of the incident's latest finished investigation."""
    incident = get_object_or_404(Incident, pk=pk)
    investigation = (
        incident.investigations.filter(status=Investigation.Status.SUCCEEDED)
        .order_by("-created_at", "-pk")
        .first()
    )
    flags = {name: request.GET.get(name, "") for name in ("all", "series")}
    if flags["all"] not in ("", "0", "1") or flags["series"] not in ("", "top", "all"):
        return HttpResponseBadRequest(
            "Unknown explorer option: all takes 0 or 1, series takes top or all.", content_type="text/plain"
        )
    context: dict[str, object] = {"incident": incident, "investigation": investigation}
    if investigation is not None:
        context.update(
            explorer_page.explorer(
                incident, investigation, show_all=flags["all"] == "1", all_series=flags["series"] == "all"
            )
        )
    return render(request, "frontend/explorer.html", context)


@viewer_required
@require_http_methods(["GET", "POST"])
def action_review(request: HttpRequest, pk: int) -> HttpResponse:
    """A proposed action with its evidence, the approve / reject forms and its audit trail."""
    proposal = get_object_or_404(
        ActionProposal.objects.select_related("investigation__incident", "decided_by"), pk=pk
    )
    if request.method == "POST":
        return _decide(request, proposal)
    return render(request, "frontend/action_review.html", action_page.action_review(proposal, request.user))


def _decide(request: HttpRequest, proposal: ActionProposal) -> HttpResponse:
    """Approve or reject through rca.incidents.approvals, which enforces roles, the tier ceiling and
    once-only on the server (and audits refusals); a refusal re-renders the page with its reason."""
    form = DecisionForm(request.POST)
    if not form.is_valid():
        context = action_page.action_review(proposal, request.user)
        context.update(
            {"error": "The decision was not understood.", "reason": request.POST.get("reason", "")}
        )
        return render(request, "frontend/action_review.html", context, status=400)
    decision, reason, tier = (
        form.cleaned_data["decision"],
        form.cleaned_data["reason"],
        form.cleaned_data["tier"],
    )
    try:
        if decision == "approve":
            approve(proposal, request.user, reason, ActionTier(tier) if tier else None)
            messages.success(request, f"Approved at tier {proposal.tier}.")
        else:
            reject(proposal, request.user, reason)
            messages.success(request, "Rejected.")
    except ApprovalError as exc:
        proposal.refresh_from_db()
        context = action_page.action_review(proposal, request.user)
        context.update({"error": exc.message, "error_code": exc.code, "reason": reason, "decision": decision})
        return render(
            request, "frontend/action_review.html", context, status=REFUSAL_STATUS.get(exc.code, 400)
        )
    return redirect(reverse("frontend:action", args=[proposal.pk]))


@viewer_required
@require_GET
def search(request: HttpRequest) -> HttpResponse:
    """Past-incident search: text (by meaning, through incident memory) and filters."""
    form = SearchForm(request.GET or None)
    results: list[past_incidents.PastIncident] = []
    note = ""
    query = past_incidents.SearchQuery()
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        until = SearchForm.day_start(data["until"])
        query = past_incidents.SearchQuery(
            q=data["q"],
            service=data["service"],
            fault_kind=data["fault_kind"],
            tier=data["tier"],
            since=SearchForm.day_start(data["since"]),
            until=until + timedelta(days=1) if until else None,  # the end date is inclusive on the page
        )
        if not query.empty:
            results, note = past_incidents.search(query)
    return render(
        request,
        "frontend/search.html",
        {
            "form": form,
            "query": query,
            "results": results,
            "note": note,
            "options": past_incidents.search_options(),
            "tier_labels": TIER_LABELS,
        },
    )
