"""Page routes."""

from django.contrib.auth import views as auth_views
from django.urls import path

from frontend import views

app_name = "frontend"

urlpatterns = [
    path("", views.home, name="home"),
    path("status/", views.status, name="status"),
    path("integrations/", views.integrations_page, name="integrations"),
    path("incidents/", views.incident_list, name="incidents"),
    path("incidents/<int:pk>/", views.incident_detail, name="incident"),
    path("incidents/<int:pk>/rerun/", views.incident_rerun, name="incident-rerun"),
    path("incidents/<int:pk>/comments/", views.incident_comment, name="incident-comment"),
    path("incidents/<int:pk>/progress.json", views.incident_progress, name="incident-progress"),
    path("incidents/<int:pk>/explorer/", views.explorer, name="explorer"),
    *(
        path(f"incidents/<int:pk>/{step}/", views.incident_workflow, {"step": step}, name=f"incident-{step}")
        for step in views.WORKFLOW_DONE
    ),
    path("actions/", views.action_inbox, name="actions"),
    path("actions/<int:pk>/", views.action_review, name="action"),
    path("search/", views.search, name="search"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="/login/"), name="logout"),
]
