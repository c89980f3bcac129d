"""Django settings of the tasks benchmark: NexusBackend ("nexus") beside django-tasks-db ("db"), same database."""

import os

import environ

SECRET_KEY = "benchmark-only"
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = [
    "django.contrib.contenttypes", "django.contrib.auth", "nexus_queues", "nexus_queues.contrib.tasks",
    "django_tasks", "django_tasks_db", "tests.testapp",
]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATABASES = {"default": {**environ.Env().db_url("BENCH_DATABASE_URL"), "CONN_MAX_AGE": None}}
TASKS = {
    "default": {
        "BACKEND": "nexus_queues.contrib.tasks.NexusBackend", "QUEUES": ["default", "reports"],
        "OPTIONS": {"batch_size": int(os.environ.get("NEXUS_TASKS_BATCH", "1"))},
    },
    "db": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default", "reports"]},
}
MIGRATION_MODULES = {"nexus_tasks": "tests.testapp.task_migrations"}
NEXUS_QUEUES = {"MODULES": ["tests.testapp.more_queues"]}
