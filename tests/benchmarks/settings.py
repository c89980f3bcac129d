"""Django settings of the benchmark: the anchors' database (ANCHOR_DSN), the test queues."""

import os

import common

_dsn = common.dsn_params()

SECRET_KEY = "benchmark-only"
USE_TZ = True
TIME_ZONE = "UTC"
# auth: the API tokens' migration (0008) refers to the user model.
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "nexus_queues", "tests.testapp"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",  # psycopg 3
        "HOST": _dsn.get("host", "127.0.0.1"),
        "PORT": _dsn.get("port", "5432"),
        "USER": _dsn.get("user", "postgres"),
        "PASSWORD": _dsn.get("password", ""),
        "NAME": _dsn["dbname"],
        # One connection per process for the whole run, as a long-lived worker keeps it.
        "CONN_MAX_AGE": None,
    }
}
if os.environ.get("SERVER_SIDE_BINDING") == "1":
    # Django's default is client-side binding, which never prepares: each statement is
    # parsed and planned by the server on every call. This measures the alternative.
    DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": 5}
NEXUS_QUEUES = {
    "MODULES": ["tests.testapp.more_queues"],
    # PREPARED_STATEMENTS=0 measures the hot statements planned on every call, as behind PgBouncer.
    "PREPARED_STATEMENTS": os.environ.get("PREPARED_STATEMENTS", "1") == "1",
}
