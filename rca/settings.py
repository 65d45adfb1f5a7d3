"""Django settings for Rootline; every value comes from the environment through rca.config."""

from __future__ import annotations

from datetime import timedelta
from importlib.util import find_spec
from pathlib import Path

import dj_database_url

from rca.config import REPO_ROOT, load_config

CONFIG = load_config()

BASE_DIR = REPO_ROOT
SECRET_KEY = CONFIG.secret_key
DEBUG = CONFIG.debug
ALLOWED_HOSTS = list(CONFIG.allowed_hosts)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "axes",  # failed-login throttling of the login page and the admin (see AXES_* below)
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI / Redoc assets served locally: the docs page stays on the host
    "graphstore",
    "frontend",
    "rca.incidents",
    "rca.evaluation",
    "rca.api",
    # Loads the Celery application in every Django process, so the domain can send tasks by name.
    "celery_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "rca.api.middleware.ChunkedBodyMiddleware",
    "rca.api.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as its documentation asks: answers a locked-out login with 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "rca.urls"
WSGI_APPLICATION = "rca.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": dj_database_url.parse(CONFIG.database_url, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default under concurrent writers: WAL lets readers go on while one writes; a writer
    # takes the lock when its transaction begins (IMMEDIATE), so two never deadlock upgrading a read
    # lock, and waits for it up to the busy timeout instead of failing at once ("database is locked").
    # synchronous=NORMAL is SQLite's recommended setting in WAL mode (durable at each checkpoint).
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": CONFIG.reliability.sqlite_busy_timeout_s,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = CONFIG.var_dir / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve app static files straight from their finders so `run` needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
# plotly.js comes from the installed `plotly` wheel (`{% static 'vendor/plotly/plotly.min.js' %}`): no copy
# in the repository, no CDN, and it always matches the Python library that builds the figures.
_PLOTLY = find_spec("plotly")
_PLOTLY_JS_DIR = Path(_PLOTLY.origin).parent / "package_data" if _PLOTLY and _PLOTLY.origin else None
STATICFILES_DIRS = [("vendor/plotly", _PLOTLY_JS_DIR)] if _PLOTLY_JS_DIR else []

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

# Failed logins (the login page and the admin both authenticate through Django's backends): after
# ROOTLINE_LOGIN_FAILURE_LIMIT failures for one account, or from one address, that account or address is
# locked out for ROOTLINE_LOGIN_LOCKOUT_S (429). django-axes keeps the attempts in the database. Intake
# tokens never authenticate here (rca.api.throttling counts their failures apart), and API tokens have
# their own per-address limit (rca.api.authentication).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = CONFIG.security.login_failure_limit
AXES_COOLOFF_TIME = timedelta(seconds=CONFIG.security.login_lockout_s)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one, on its own, locks out
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "rca.api.throttling.client_address"  # the same address the API throttles see
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
AXES_DISABLE_ACCESS_LOG = True  # failures are what is counted; the audit trail records decisions
ROOTLINE_API_TOKEN_FAILURE_RATE = CONFIG.security.api_token_failure_rate

# Security headers. For a TLS deployment (see README): secure cookies and HSTS from the environment.
SESSION_COOKIE_SECURE = CONFIG.security.session_cookie_secure
CSRF_COOKIE_SECURE = CONFIG.security.csrf_cookie_secure
SECURE_HSTS_SECONDS = CONFIG.security.hsts_seconds
SECURE_HSTS_INCLUDE_SUBDOMAINS = CONFIG.security.hsts_include_subdomains
SECURE_HSTS_PRELOAD = CONFIG.security.hsts_preload
SECURE_SSL_REDIRECT = CONFIG.security.ssl_redirect
if CONFIG.security.trust_forwarded_proto:
    # Only behind a proxy that sets this header itself (and strips a client's own).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Sent on every response by rca.api.middleware (Django 5.2 has no CSP support of its own): nothing is
# loaded from, or sent to, another host. `data:` images are Swagger UI's inline SVG icons.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Token first: an unauthenticated request then gets 401 with `WWW-Authenticate: Token`, not 403.
    # Session authentication enforces CSRF on unsafe methods.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rca.api.authentication.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rca.api.permissions.IsViewer"],
    "DEFAULT_PAGINATION_CLASS": "rca.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "rca.api.errors.exception_handler",
    # Throttles key unauthenticated attempts on the client address: X-Forwarded-For is trusted only
    # for this many proxies in front (DRF's default, None, would trust any sender's header).
    "NUM_PROXIES": CONFIG.num_proxies,
}
# Intake rate limits (rca.api.throttling), kept in the cache below.
ROOTLINE_INTAKE_RATE = CONFIG.intake_rate
ROOTLINE_INTAKE_FAILURE_RATE = CONFIG.intake_failure_rate
# Shared by every web process (a per-process cache would multiply each limit by their number). Short
# timeouts: when Redis is down the throttles let requests through rather than hold intake up.
CACHES = {
    "default": {
        "BACKEND": "rca.redis_cache.SharedClientRedisCache",  # one Redis client per thread, not per call
        "LOCATION": CONFIG.redis_url,
        "KEY_PREFIX": "rootline",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Rootline API",
    "DESCRIPTION": "Incident root-cause analysis whose conclusions are proven by evidence.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rca.api.permissions.IsViewer"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Swagger UI would fetch a validator badge from validator.swagger.io: never leave the host.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ActionTierEnum": "rca.api.schema.TIER_CHOICES",
        "EvidenceSourceEnum": "rca.core.evidence.Source",
        "IntakeSourceEnum": "rca.incidents.models.IntakeSource",
        "IncidentStatusEnum": "rca.api.schema.IncidentStatus",
        "AlertStatusEnum": "rca.api.schema.AlertStatus",
        "InvestigationStatusEnum": "rca.api.schema.InvestigationStatus",
        "ActionStatusEnum": "rca.api.schema.ActionStatus",
        "HealthStatusEnum": "rca.api.schema.HEALTH_STATUSES",
        "WebhookAlertStatusEnum": "rca.incidents.serializers.ALERT_STATUSES",
    },
}

# Celery reads CELERY_* settings through celery_app.app (namespace="CELERY").
CELERY_BROKER_URL = CONFIG.redis_url
CELERY_RESULT_BACKEND = CONFIG.redis_url
CELERY_TASK_ALWAYS_EAGER = CONFIG.celery_eager
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Workers keep Django's LOGGING (JSON lines with the incident and investigation ids) instead of
# Celery's own handlers.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# A message whose worker died unacknowledged is redelivered after this long (Redis transport), so it
# must exceed the longest task: an investigation is bounded at a few minutes.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CONFIG.task_visibility_s}
# Every task is ended before that redelivery: the hard limit kills it a minute before the visibility
# timeout, the soft one raises SoftTimeLimitExceeded a minute earlier still, so an investigation records
# itself as failed (rca.incidents.investigations) instead of vanishing with its worker process.
CELERY_TASK_TIME_LIMIT = max(CONFIG.task_visibility_s - 60, 120)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 60
CELERY_RESULT_EXPIRES = 24 * 3600
# Most tasks are fire-and-forget (their outcome is in the database): storing no result means sending
# one never touches the result backend, so intake does not wait on it when Redis is down. The tasks
# whose answer a caller waits for (ping, incident memory's) declare ignore_result=False.
CELERY_TASK_IGNORE_RESULT = True
# A caller waiting on a result gives up quickly when Redis is gone (Celery's default is 20 retries).
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {
    "retry_policy": {"max_retries": 2, "interval_start": 0, "interval_step": 0.25, "interval_max": 0.5}
}
# Incident memory's tasks run where the vector store is: in Qdrant's local mode that is one worker
# consuming this queue, the only process that may open the store's folder (see rca.memory.remote).
CELERY_TASK_ROUTES = {"rootline.memory_*": {"queue": "memory"}, "rootline.index_memory": {"queue": "memory"}}
# The outbox: investigations queued while the broker was down, or whose task was lost, are sent by
# this sweep (rca.incidents.outbox).
CELERY_BEAT_SCHEDULE = {
    "dispatch-pending": {"task": "rootline.dispatch_pending", "schedule": CONFIG.reliability.sweep_every_s}
}

ROOTLINE_RELIABILITY = CONFIG.reliability  # health deadlines, heartbeats, recovery sweep, intake retries
ROOTLINE_GRAPH = CONFIG.graph
ROOTLINE_QDRANT_URL = CONFIG.qdrant_url
ROOTLINE_QDRANT_PATH = CONFIG.qdrant_path
ROOTLINE_MEMORY_VIA_WORKER = CONFIG.memory_via_worker
ROOTLINE_MEMORY_TIMEOUT_S = CONFIG.memory_timeout_s
ROOTLINE_METRICS_TOKEN = CONFIG.metrics_token
ROOTLINE_DATA_DIR = CONFIG.data_dir
ROOTLINE_VAR_DIR = CONFIG.var_dir
ROOTLINE_POLICY = CONFIG.policy  # which policy investigates (rca.investigation.anthropic_policy)
ROOTLINE_LIVE_TELEMETRY = CONFIG.live_telemetry
ROOTLINE_ACTIONS = CONFIG.actions  # executors of approved actions (rca.actions)
# Where e-mail notifications go out (ROOTLINE_NOTIFY_EMAIL names the recipients).
EMAIL_HOST = CONFIG.smtp.host
EMAIL_PORT = CONFIG.smtp.port
EMAIL_HOST_USER = CONFIG.smtp.user
EMAIL_HOST_PASSWORD = CONFIG.smtp.password
EMAIL_USE_TLS = CONFIG.smtp.use_tls
DEFAULT_FROM_EMAIL = CONFIG.smtp.sender

# JSON lines by default (one object per record, with the incident and investigation it is about);
# ROOTLINE_LOG_FORMAT=text for a terminal.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "rca.log_context.ContextFilter"}},
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(incident_id)s %(investigation_id)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": CONFIG.log_format, "filters": ["context"]}
    },
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {"neo4j": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}
