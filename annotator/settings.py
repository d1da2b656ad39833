"""Settings for annotator, driven by environment variables (documented in .env.example).

Without DATABASE_URL the app runs on an embedded SQLite file and runs Celery tasks in-process;
with DATABASE_URL and REDIS_URL it uses PostgreSQL, Redis and a separate Celery worker.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", default=False)
SECURE = env_bool("DJANGO_SECURE", default=False)
SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if SECURE:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_SECURE=1")
    # Local development and tests only; `check --deploy` flags this key.
    SECRET_KEY = "django-insecure-local-development-key-change-me"
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django.contrib.humanize",
    "django.forms",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
    "annotator.apps.AnnotatorConfig",
    "annotator.accounts",
    "annotator.issues",
    "annotator.studies",
    "annotator.adjudication",
    "annotator.agreement",
    "annotator.exports",
    "annotator.backup",
    "annotator.screening",
    "annotator.machine",
    "annotator.similarity",
    "taxonomy_app",
    # Sign in with GitHub (annotator/accounts/github.py): installed always, so the tables exist
    # whatever the configuration; the routes answer 404 until GITHUB_OAUTH_CLIENT_ID is set.
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.github",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # A NUL byte or a number int() cannot read in the path, query or form: 400 naming it.
    "annotator.middleware.BadInputMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "annotator.middleware.DatabaseUnavailableMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "allauth.account.middleware.AccountMiddleware",  # required by allauth's GitHub views
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "annotator.urls"
FORM_RENDERER = "annotator.renderers.FormRenderer"
WSGI_APPLICATION = "annotator.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            # {% partialdef %} everywhere without {% load %}, as it is built into Django 6.
            "builtins": ["template_partials.templatetags.partials"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotator.context_processors.nav",
            ],
        },
    },
]

DATA_DIR = Path(env_str("ANNOTATOR_DATA_DIR") or BASE_DIR / "var")
DATABASE_URL = env_str("DATABASE_URL")
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL or f"sqlite:///{DATA_DIR / 'annotator.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A database that accepts no connection fails the request within seconds (a 503 page,
    # annotator/middleware.py) instead of after the system's TCP timeout of minutes.
    DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = 3
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "issues:list"
LOGOUT_REDIRECT_URL = "login"

# Login throttling (django-axes): a username tried from one address is locked out after
# LOGIN_FAILURE_LIMIT wrong passwords for LOGIN_LOCKOUT_MINUTES, counted in the database. The
# axes backend comes first so a locked-out login stops before any password is checked; it needs
# the request, so code that logs people in calls authenticate(request, ...). API tokens and
# sessions never call authenticate() and are not throttled.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Attempts while locked are refused without being counted, so the lock ends when the page says.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The username a failed login records, cut to the column's 255 characters (a longer one is
# nobody's; the login form does not enforce its max_length before authenticating).
AXES_USERNAME_CALLABLE = "annotator.middleware.login_username"

# E-mail (password reset links): printed to the console unless EMAIL_HOST names an SMTP server.
# EMAIL_BACKEND may name another backend outright. Tests capture mail in memory (locmem).
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "annotator@localhost")
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_TIMEOUT_HOURS", 24) * 3600

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT") or BASE_DIR / "staticfiles")
MEDIA_ROOT = Path(env_str("DJANGO_MEDIA_ROOT") or DATA_DIR / "media")
MEDIA_URL = "media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed files from `collectstatic` in production; served from static/ otherwise.
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if SECURE
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not SECURE

# Uploads: the import service streams the file from disk, so keep request bodies in memory small.
IMPORT_MAX_BYTES = env_int("ANNOTATOR_IMPORT_MAX_MB", 200) * 1024 * 1024
# Every upload passes annotator/uploads.py: each kind's limit holds while the request streams in
# (the handler below), and XLSX workbooks, being zip archives, are capped inflated too.
WORKBOOK_MAX_BYTES = env_int("ANNOTATOR_WORKBOOK_MAX_MB", 20) * 1024 * 1024
# Label Studio JSON and doccano JSONL prior-label files: plain text, no zip to inflate and read
# by the worker of the wizard's steps (doccano line by line; a Label Studio export is one JSON
# list, parsed whole: ~8 bytes of memory per byte of file), so a larger cap than a workbook's.
LABEL_FILE_MAX_BYTES = env_int("ANNOTATOR_LABEL_FILE_MAX_MB", 100) * 1024 * 1024
# A codebook is parsed and written inside the request: the seed one is 38 KB (65 categories).
CODEBOOK_MAX_BYTES = env_int("ANNOTATOR_CODEBOOK_MAX_KB", 512) * 1024
# Prior-label workbooks are read whole inside the request at each wizard step (inspect, review,
# import): refused at upload past this many cells in all sheets (the TOSEM 2023 ones: ~6,700).
WORKBOOK_MAX_CELLS = env_int("ANNOTATOR_WORKBOOK_MAX_CELLS", 50_000)
# Nesting limits: deeper JSON (or YAML) is refused before a parser builds it, naming the position
# (annotator/json_depth.py: issue files, API bodies; taxonomy_app/formats.py: codebook files).
IMPORT_MAX_DEPTH = env_int("ANNOTATOR_IMPORT_MAX_DEPTH", 64)
# Per issue file: records, and characters in any one string (GitHub caps a body at 65,536).
IMPORT_MAX_RECORDS = env_int("ANNOTATOR_IMPORT_MAX_RECORDS", 5_000_000)
IMPORT_MAX_STRING = env_int("ANNOTATOR_IMPORT_MAX_STRING", 1_000_000)
API_MAX_DEPTH = env_int("ANNOTATOR_API_MAX_DEPTH", 64)
CODEBOOK_MAX_DEPTH = env_int("ANNOTATOR_CODEBOOK_MAX_DEPTH", 32)
# A parsing job may grow its address space by this much before MemoryError fails it (0: no limit;
# annotator/jobs.py memory_budget); CELERY_WORKER_MAX_MEMORY_PER_CHILD replaces a grown worker.
IMPORT_JOB_MAX_MEMORY_MB = env_int("ANNOTATOR_IMPORT_JOB_MAX_MEMORY_MB", 2048)
XLSX_MAX_INFLATED_BYTES = env_int("ANNOTATOR_XLSX_MAX_INFLATED_MB", 200) * 1024 * 1024
XLSX_MAX_RATIO = env_int("ANNOTATOR_XLSX_MAX_RATIO", 100)
# Any other route taking a file (annotator/upload_handling.py: ROUTE_KINDS lists the kinds).
UPLOAD_MAX_BYTES = env_int("ANNOTATOR_UPLOAD_MAX_MB", 2048) * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "annotator.upload_handling.LimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# The app's own temporary files: uploads being received (past FILE_UPLOAD_MAX_MEMORY_SIZE) and
# the sheets of an XLSX export being written (annotator/exports/writers.py). A request or job
# killed midway leaves its files there; the job sweep (annotator/job_sweep.py) deletes those
# untouched for TEMP_FILE_MAX_AGE_SECONDS that no process on the machine has open. Web and
# worker should share it (a volume), so that the worker's sweep sees the web's leftovers.
TEMP_DIR = Path(env_str("ANNOTATOR_TEMP_DIR") or DATA_DIR / "tmp")
FILE_UPLOAD_TEMP_DIR = str(TEMP_DIR / "uploads")
XLSX_TEMP_DIR = str(TEMP_DIR / "xlsx")

# Production hardening; `manage.py check --deploy` is clean when DJANGO_SECURE=1.
SESSION_COOKIE_SECURE = SECURE
CSRF_COOKIE_SECURE = SECURE
SECURE_SSL_REDIRECT = SECURE and env_bool("DJANGO_SSL_REDIRECT", default=True)
SECURE_HSTS_SECONDS = 31536000 if SECURE else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE
SECURE_HSTS_PRELOAD = SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if SECURE else None
SESSION_COOKIE_HTTPONLY = True
# Lax, not Strict: a link from a mail or the tracker to a study page must arrive logged in.
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp), enforced in every mode, so development and tests meet
# what production serves: scripts and styles only from our static files, no inline code or
# handlers (htmx is told neither to inject its indicator <style> nor to eval: templates/base.html).
# Issue bodies keep their screenshots (annotator/issues/rendering.py allows http(s) <img>), so
# the image hosts GitHub uses are allowed, for images alone. /api/docs/ widens the policy for
# itself only (annotator/urls.py).
CSP_IMAGE_HOSTS = env_list(
    "ANNOTATOR_CSP_IMAGE_HOSTS", "https://github.com,https://*.githubusercontent.com"
)
# Sign in with GitHub posts a form whose answer redirects to GitHub's authorize page, which
# form-action must allow (browsers check a form's redirects too).
_GITHUB_SIGN_IN = (
    [env_str("GITHUB_OAUTH_URL", "https://github.com").rstrip("/")]
    if env_str("GITHUB_OAUTH_CLIENT_ID")
    else []
)
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:", *CSP_IMAGE_HOSTS],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF, *_GITHUB_SIGN_IN],
        "frame-ancestors": [NONE],
    }
}

REDIS_URL = env_str("REDIS_URL")
# A Redis that is down or hung acts as an empty cache (annotator/cache.py): these timeouts bound
# what one request can lose to it, then it is skipped for a few seconds.
CACHES = {
    "default": {
        "BACKEND": "annotator.cache.TolerantRedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.5},
    }
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# Sessions are read on every request; with a shared cache they come from Redis, written through
# to the database. Without Redis each process would hold its own copy, and a logout in one
# process would not reach the others, so sessions then stay in the database alone.
SESSION_ENGINE = (
    "django.contrib.sessions.backends.cached_db"
    if REDIS_URL
    else "django.contrib.sessions.backends.db"
)

# Celery: a worker over Redis when REDIS_URL is set, otherwise tasks run in-process.
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "annotator")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# In KiB: a child that ends a task above this is replaced, so one job's memory is not kept.
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int("CELERY_WORKER_MAX_MEMORY_MB", 1024) * 1024
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 3600)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 60
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
# Starting a job when Redis is down or hung costs about a second, not minutes: short broker
# timeouts and one quick publish retry. A job that could not be sent stays queued and is sent
# again by a worker that starts and by beat (annotator/dispatch.py, imported by the worker).
CELERY_BROKER_CONNECTION_TIMEOUT = 1.0
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 1.0, "socket_timeout": 1.0}
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_IMPORTS = ["annotator.dispatch", "annotator.figures"]

# Whole-study figures (the dashboard and progress API, the disagreement analytics, the analysis)
# of a study with more items than this are computed by a background job and served from the
# last computation meanwhile; a smaller study's in the request (annotator/figures.py). A job
# holds its lock this many seconds at most (waiting in the queue and running).
FIGURES_INLINE_MAX_ITEMS = env_int("FIGURES_INLINE_MAX_ITEMS", 20_000)
FIGURES_LOCK_SECONDS = env_int("FIGURES_LOCK_SECONDS", 600)
# A figures job starts at most this often per figures (annotator/figures.py).
FIGURES_MIN_INTERVAL_SECONDS = env_int("FIGURES_MIN_INTERVAL_SECONDS", 30)

# GitHub sync (annotator/issues/sync.py). Without a token GitHub allows 60 requests an hour.
# A sync started by someone who stored their own GitHub token uses theirs instead (below).
GITHUB_TOKEN = env_str("GITHUB_TOKEN")

# Sign in with GitHub (annotator/accounts/github.py, django-allauth), absent unless the operator
# registers an OAuth app and sets its id and secret; GITHUB_OAUTH_URL serves GitHub Enterprise
# (and test servers). GITHUB_OAUTH_REPO_SCOPE: "" (the token reads public repositories),
# "public_repo" or "repo" (private ones too) is what the sign-in asks for the syncing token.
GITHUB_OAUTH_CLIENT_ID = env_str("GITHUB_OAUTH_CLIENT_ID")
GITHUB_OAUTH_REPO_SCOPE = env_str("GITHUB_OAUTH_REPO_SCOPE")
if GITHUB_OAUTH_REPO_SCOPE not in {"", "public_repo", "repo"}:
    raise ImproperlyConfigured("GITHUB_OAUTH_REPO_SCOPE must be empty, public_repo or repo")
SOCIALACCOUNT_PROVIDERS: dict[str, dict[str, object]] = {
    "github": {
        "APPS": [
            {
                "client_id": GITHUB_OAUTH_CLIENT_ID,
                "secret": env_str("GITHUB_OAUTH_CLIENT_SECRET"),
            }
        ]
        if GITHUB_OAUTH_CLIENT_ID
        else [],
        "GITHUB_URL": env_str("GITHUB_OAUTH_URL", "https://github.com"),
        "SCOPE": ["read:user", "user:email", *filter(None, [GITHUB_OAUTH_REPO_SCOPE])],
    }
}
SOCIALACCOUNT_ADAPTER = "annotator.accounts.github.GitHubAccountAdapter"
ACCOUNT_ADAPTER = "annotator.accounts.github.AccountAdapter"
# allauth would keep the access token in clear (SocialToken); annotator.accounts keeps it
# encrypted with ANNOTATOR_TOKEN_KEYS instead, and no mail or e-mail verification is involved.
SOCIALACCOUNT_STORE_TOKENS = False
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_LOGIN_ON_GET = False
# Ask GET /user/emails: a private address must still be seen, to refuse one a local account has.
SOCIALACCOUNT_QUERY_EMAIL = True
ACCOUNT_EMAIL_VERIFICATION = "none"
# Per-user GitHub tokens are encrypted at rest with these Fernet keys (comma-separated, newest
# first; `manage.py rotate_token_keys` re-encrypts every row with the first). Without a key no
# token is stored and every sync uses GITHUB_TOKEN. Make one with:
# python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"
TOKEN_KEYS = env_list("ANNOTATOR_TOKEN_KEYS")

# The machine rater (annotator/machine): an OpenAI-compatible chat-completions server. Without
# LLM_BASE_URL (and no base URL on a rater) the feature is absent; everything else works.
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_TIMEOUT_SECONDS = env_int("LLM_TIMEOUT_SECONDS", 120)
# Retries of 429 (honouring retry-after), 408/409, 5xx and timeouts, with the client's backoff.
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 4)
MACHINE_TIME_LIMIT_SECONDS = env_int("MACHINE_TIME_LIMIT_SECONDS", 6 * 3600)
# Machine runs queued or running at once on this server (one per rater in any case).
LLM_MAX_CONCURRENT_RUNS = env_int("LLM_MAX_CONCURRENT_RUNS", 2)
# A near-duplicate pass over the whole pool (annotator/similarity): ~2 minutes at 100,000 issues.
DUPLICATE_PASS_TIME_LIMIT_SECONDS = env_int("DUPLICATE_PASS_TIME_LIMIT_SECONDS", 3600)
GITHUB_API_URL = env_str("GITHUB_API_URL", "https://api.github.com")
# Celery beat re-syncs repositories marked "keep in sync" this often; 0 turns it off.
GITHUB_RESYNC_MINUTES = env_int("GITHUB_RESYNC_MINUTES", 60)
CELERY_BEAT_SCHEDULE = {
    # Imports and syncs index what they wrote; this catches what a stopped job left behind.
    "index-search": {"task": "annotator.issues.tasks.index_search_task", "schedule": 300.0},
}
if GITHUB_RESYNC_MINUTES > 0:
    CELERY_BEAT_SCHEDULE["resync-github"] = {
        "task": "annotator.issues.tasks.resync_github_task",
        "schedule": GITHUB_RESYNC_MINUTES * 60.0,
    }

# Studies (annotator/studies): an assignment left untouched this long returns to the pool,
# checked by Celery beat every STUDIES_RELEASE_EVERY_SECONDS; 0 minutes keeps them forever.
STUDIES_ASSIGNMENT_TIMEOUT_MINUTES = env_int("STUDIES_ASSIGNMENT_TIMEOUT_MINUTES", 60)
if STUDIES_ASSIGNMENT_TIMEOUT_MINUTES > 0:
    CELERY_BEAT_SCHEDULE["release-stale-assignments"] = {
        "task": "annotator.studies.tasks.release_stale_assignments_task",
        "schedule": float(env_int("STUDIES_RELEASE_EVERY_SECONDS", 300)),
    }
# Invitation links (annotator/studies): a new link works this many days (its owner may revoke
# it sooner, or limit how many people join by it).
STUDIES_INVITATION_DAYS = env_int("STUDIES_INVITATION_DAYS", 14)
# Agreement (annotator/agreement): a run's time limit; a run still going past it is marked failed
# by the sweep, which also starts runs for rounds that completed without one (every minute).
AGREEMENT_TIME_LIMIT_SECONDS = env_int("AGREEMENT_TIME_LIMIT_SECONDS", 600)
CELERY_BEAT_SCHEDULE["agreement-sweep"] = {
    "task": "annotator.agreement.tasks.agreement_sweep_task",
    "schedule": 60.0,
}
# Jobs (annotator/jobs.py, job_sweep.py): a running job whose worker gave no sign of life for
# this long is marked failed by the sweep; running workers touch it every quarter of it.
JOB_HEARTBEAT_TIMEOUT_SECONDS = env_int("JOB_HEARTBEAT_TIMEOUT_SECONDS", 120)
# Temporary files (TEMP_DIR) untouched this long are removed by that sweep; never less than the
# task time limit and a minute, so that no running job's file is ever old enough.
TEMP_FILE_MAX_AGE_SECONDS = max(
    env_int("ANNOTATOR_TEMP_MAX_AGE_MINUTES", 60) * 60, CELERY_TASK_TIME_LIMIT + 60
)
CELERY_BEAT_SCHEDULE["lost-jobs-sweep"] = {
    "task": "annotator.jobs.sweep_lost_jobs_task",
    "schedule": float(max(5, min(60, JOB_HEARTBEAT_TIMEOUT_SECONDS // 2))),
}
# Jobs that could not be sent while Redis was down are sent again this often (annotator/dispatch).
CELERY_BEAT_SCHEDULE["redispatch-waiting-jobs"] = {
    "task": "annotator.dispatch.redispatch_waiting_jobs_task",
    "schedule": 30.0,
}
# taxonomy_app counts and moves labels through this hook (taxonomy_app/usage.py).
TAXONOMY_LABEL_USAGE = "annotator.studies.usage.StudyLabelUsage"
# A decision in a screening round reaches the screening app through this hook (it may start a
# retrain; annotator/studies/services/annotation.py after_screening_decision).
STUDIES_SCREENING_DECISION_HOOK = "annotator.screening.services.after_screening_decision"
# A retrain job's time limit (its round's features are kept under MEDIA_ROOT/screening/).
SCREENING_TIME_LIMIT_SECONDS = env_int("SCREENING_TIME_LIMIT_SECONDS", 1800)
# …and checks codebook uploads through this one (taxonomy_app/uploads.py; NUL escapes too).
TAXONOMY_UPLOAD_CHECK = "annotator.codebook_uploads.check_codebook_upload"

REST_FRAMEWORK = {
    # Token first, so that an unauthenticated script gets 401 with WWW-Authenticate.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotator.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON nested deeper than API_MAX_DEPTH is a 400 naming the limit (annotator/api_parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "annotator.api_parsers.DepthLimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "annotator API",
    "DESCRIPTION": "Issues, codebooks, studies, annotations, agreement and exports.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from our own static files (drf-spectacular-sidecar), not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Three models have a "kind"; name each enum after its model.
    "ENUM_NAME_OVERRIDES": {
        "FacetKindEnum": "taxonomy_app.models.Facet.Kind",
        "ChangeKindEnum": "taxonomy_app.models.ChangeOperation.Kind",
        "RoundKindEnum": "annotator.studies.models.Round.Kind",
        "MemberRoleEnum": "annotator.studies.models.Membership.Role",
        # Two models have a "state"; the keeps the name it had.
        "StateEnum": "annotator.issues.models.Issue.State",
        "ApiTokenStateEnum": "annotator.accounts.models.ApiToken.State",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
