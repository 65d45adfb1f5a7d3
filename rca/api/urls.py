"""Routes under /api/v1/."""

from django.urls import path
from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework.routers import SimpleRouter

from rca.api import views

app_name = "api"

router = SimpleRouter()
router.register("incidents", views.IncidentViewSet, basename="incident")
router.register("investigations", views.InvestigationViewSet, basename="investigation")
router.register("actions", views.ActionViewSet, basename="action")

urlpatterns = [
    path("webhooks/alertmanager/", views.AlertmanagerWebhookView.as_view(), name="webhook-alertmanager"),
    path("webhooks/generic/", views.GenericWebhookView.as_view(), name="webhook-generic"),
    path("search/", views.SearchView.as_view(), name="search"),
    path("health/", views.HealthView.as_view(), name="health"),
    path("schema/", SpectacularJSONAPIView.as_view(), name="schema"),
    path("docs/", views.DocsView.as_view(url_name="api:schema"), name="docs"),
    *router.urls,
]
