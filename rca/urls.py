"""Top-level URL routes."""

from django.contrib import admin
from django.urls import include, path

from rca.api.views import healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include("rca.api.urls")),
    path("", include("frontend.urls")),
]
