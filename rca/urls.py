"""Top-level URL routes."""

from django.contrib import admin
from django.urls import include, path

from rca.api.views import healthz
from rca.prometheus import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include("rca.api.urls")),
    path("", include("frontend.urls")),
]
