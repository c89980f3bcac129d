"""The nexus backend's system checks, run by the tasks framework's ``check()``."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks

APP_LABEL = "nexus_tasks"


def backend_problems(backend: Any) -> list[checks.CheckMessage]:
    """What keeps ``backend``'s queues from having tables: the app, or where their migrations go."""
    if not apps.is_installed("nexus_queues.contrib.tasks"):
        return [
            checks.Error(
                f"Task backend {backend.alias!r} is a NexusBackend, but its app is not installed.",
                hint="Add 'nexus_queues.contrib.tasks' to INSTALLED_APPS (after 'nexus_queues').",
                id="nexus_queues.tasks.E001",
            )
        ]
    if APP_LABEL not in getattr(settings, "MIGRATION_MODULES", {}):
        return [
            checks.Error(
                "The task queues' migrations have no home: their tables follow your TASKS setting, so the "
                "migrations belong to your project, not to the installed package.",
                hint=f'Set MIGRATION_MODULES = {{"{APP_LABEL}": "<your_project>.task_migrations"}}, then run '
                f"manage.py makemigrations {APP_LABEL} (again whenever you add a task queue).",
                id="nexus_queues.tasks.E002",
            )
        ]
    return []
