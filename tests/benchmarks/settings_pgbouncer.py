"""Django settings of ``bench_pgbouncer.py``: ``DATABASE_URL``'s database, reached directly, or through the
benchmark's PgBouncer when ``NEXUS_BENCH_PGBOUNCER_PORT`` is set (transaction pooling, as the guide says to set it)."""

import os

import environ

SECRET_KEY = "benchmark-only"
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "nexus_queues", "tests.testapp"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ROOT_URLCONF = __name__  # no URLs: the commands' system checks still look for the API's
urlpatterns: list[object] = []
DATABASES = {"default": environ.Env().db("DATABASE_URL") | {"CONN_MAX_AGE": None}}
NEXUS_QUEUES: dict[str, object] = {
    "MODULES": ["tests.testapp.more_queues"],
    "PREPARED_STATEMENTS": os.environ.get("PREPARED_STATEMENTS", "1") == "1",
}
if os.environ.get("NEXUS_BENCH_PGBOUNCER_PORT"):
    DATABASES["direct"] = {**DATABASES["default"]}
    DATABASES["default"] |= {
        "HOST": "127.0.0.1", "PORT": int(os.environ["NEXUS_BENCH_PGBOUNCER_PORT"]), "DISABLE_SERVER_SIDE_CURSORS": True,
    }
    NEXUS_QUEUES |= {"PREPARED_STATEMENTS": False, "WAKEUP_DATABASES": {"default": "direct"}}
LOGGING = {
    "version": 1,
    "formatters": {"timed": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "timed"}},
    "loggers": {"nexus_queues": {"handlers": ["stderr"], "level": "INFO"}},
}
