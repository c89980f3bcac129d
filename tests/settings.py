"""Settings of the test suite. ``DATABASE_URL`` picks the engine (default: a SQLite file)."""

import os
import tempfile
from datetime import timedelta
from importlib.util import find_spec
from pathlib import Path

import environ

env = environ.Env()

SECRET_KEY = "tests-only"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "health_check",  # its page template, for the per-queue health checks
    "ninja",  # the API docs page serves Swagger UI from static files (nexus_queues.W004)
    "nexus_queues",
    "nexus_queues.contrib.spark",
    "nexus_queues.contrib.rabbitmq",
    "nexus_queues.contrib.tasks",
    *([] if find_spec("django.tasks") else ["django_tasks"]),  # the backport before Django 6
    "tests.testapp",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
STATIC_URL = "static/"
# Every test user's password is hashed once at least: PBKDF2's million rounds would cost a CPU second each.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# This run's token, in the test database's name (and the default SQLite file's), so that two runs on one machine
# (two checkouts, or a developer and CI) never share one; subprocesses inherit it with the environment.
RUN = os.environ.setdefault("NEXUS_TEST_RUN", str(os.getpid()))
_sqlite_file = Path(tempfile.gettempdir()) / f"nexus_queues_tests_{RUN}.sqlite3"
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{_sqlite_file}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory, so that worker subprocesses share the test database.
    _test_file = Path(DATABASES["default"]["NAME"]).with_suffix(f".test_{RUN}.sqlite3")
    DATABASES["default"]["TEST"] = {"NAME": str(_test_file)}
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
else:
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{RUN}"}
if DATABASES["default"]["ENGINE"] == "django.db.backends.mysql":
    DATABASES["default"]["TEST"] |= {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"}
# Subprocesses started by tests connect straight to the test database.
if os.environ.get("NEXUS_TEST_DB_NAME"):
    DATABASES["default"]["NAME"] = os.environ["NEXUS_TEST_DB_NAME"]

NEXUS_QUEUES: dict[str, object] = {"MODULES": ["tests.testapp.more_queues"]}
# Two task queues on nexus queues; their tables' migrations live with the test app, as a project's would.
TASKS = {
    "default": {
        "BACKEND": "nexus_queues.contrib.tasks.NexusBackend", "QUEUES": ["default", "reports"],
        "OPTIONS": {"batch_size": int(os.environ.get("NEXUS_TEST_TASKS_BATCH", "1"))},
    }
}
MIGRATION_MODULES = {"nexus_tasks": "tests.testapp.task_migrations"}
# The worker processes' heartbeats, quick in the tests that watch them.
if os.environ.get("NEXUS_TEST_HEARTBEAT_INTERVAL"):
    NEXUS_QUEUES["WORKER_HEARTBEAT_INTERVAL"] = timedelta(seconds=float(os.environ["NEXUS_TEST_HEARTBEAT_INTERVAL"]))
# The tasks tests' result size limit, low where a test says so.
if os.environ.get("NEXUS_TEST_TASK_RESULT_MAX_BYTES"):
    NEXUS_QUEUES["TASK_RESULT_MAX_BYTES"] = int(os.environ["NEXUS_TEST_TASK_RESULT_MAX_BYTES"])
# The RabbitMQ bridge's tests use the real broker; a subprocess gets its test's delay prefix by the environment.
NEXUS_RABBITMQ = {
    "URL": env("NEXUS_TEST_RABBITMQ_URL", default="amqp://guest:guest@127.0.0.1:5672/%2F"),
    "DELAY_PREFIX": env("NEXUS_TEST_RABBITMQ_PREFIX", default="nexus-tests"),
}
# The consumer's backoff, short in the tests that lift a refusal and watch it recover.
if os.environ.get("NEXUS_TEST_RABBITMQ_MAX_BACKOFF"):
    NEXUS_RABBITMQ["MAX_BACKOFF"] = timedelta(seconds=float(os.environ["NEXUS_TEST_RABBITMQ_MAX_BACKOFF"]))
# A second alias on the same database, for queues that name another one (``database="queues"``):
# Django sets it up as a mirror of the default test database.
DATABASES["queues"] = {**DATABASES["default"]}
