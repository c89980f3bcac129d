"""The tasks framework's names, from ``django.tasks`` (Django 6) or else the ``django_tasks`` backport."""

from __future__ import annotations

from importlib.util import find_spec

if find_spec("django.tasks") is not None:
    from django.tasks import task, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
    from django.tasks.exceptions import TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json
else:
    from django_tasks import task, task_backends  # type: ignore[no-redef,assignment,unused-ignore]
    from django_tasks.backends.base import BaseTaskBackend  # type: ignore[no-redef,assignment,unused-ignore]
    from django_tasks.base import (  # type: ignore[no-redef,assignment,unused-ignore]
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django_tasks.exceptions import TaskResultDoesNotExist  # type: ignore[no-redef,assignment,unused-ignore]
    from django_tasks.signals import task_enqueued, task_finished, task_started  # type: ignore[no-redef,assignment,unused-ignore]
    from django_tasks.utils import normalize_json  # type: ignore[no-redef,assignment,unused-ignore]

__all__ = [
    "BaseTaskBackend",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
