"""The backend's reads and writes of the task queues' tables: a task stored on enqueue, a result found by its id.

Kept apart from :mod:`~nexus_queues.contrib.tasks.backend`, which imports it on first use: the tables are models, and a
``@task`` may be declared (and so its backend loaded) before Django's app registry is ready.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from ... import signals
from ...backends import backend_for
from ...conf import settings
from ...enqueueing import EnqueueResult, enqueue_row, resolve_placement
from ...exceptions import NotRegistered
from ...limits import unstorable_text
from .compat import Task, TaskResult, TaskResultDoesNotExist, TaskResultStatus, normalize_json, task_enqueued
from .queues import TaskMessage, task_queue
from .results import task_result

if TYPE_CHECKING:
    from .backend import NexusBackend


def store_task(backend: NexusBackend, task: Task, args: Any, kwargs: Any) -> TaskResult:
    """Write ``task`` to its queue's table, in the caller's transaction on that database; its READY result."""
    message_class = queue_of(task.queue_name)
    json_args: Any = normalize_json(args)  # the framework's check: TypeError or ValueError when not JSON
    json_kwargs: Any = normalize_json(kwargs)
    message = message_class(
        id=str(uuid.uuid4()), task=task.module_path, args=json_args, kwargs=json_kwargs, backend=backend.alias,
        run_after=task.run_after,
    )
    now = timezone.now()
    row = enqueue_row(message, resolve_placement(task.run_after, None, None, None, None), now)
    alias = message_class.queue_options.database
    # One statement (on PostgreSQL the wake-up rides in it): Sleeping rows wait for the dispatch loop instead.
    row_id = backend_for(alias).insert_one(
        message_class.queue_model, row, notify=settings.NOTIFY and task.run_after is None,
        extra={"priority": task.priority},
    )
    result: TaskResult = TaskResult(
        task=task, id=message.id, status=TaskResultStatus.READY, enqueued_at=now, started_at=None,
        finished_at=None, last_attempted_at=None, args=message.args, kwargs=message.kwargs, backend=backend.alias,
        errors=[], worker_ids=[],
    )
    signals.send(signals.enqueued, message_class, alias, result=EnqueueResult(stored=(message,), ids=(row_id,)))
    transaction.on_commit(lambda: task_enqueued.send(type(backend), task_result=result), using=alias)
    return result


def find_result(queue_names: Iterable[str], result_id: str) -> TaskResult:
    """The result of task ``result_id`` as its row in one of ``queue_names`` says now, or ``TaskResultDoesNotExist``."""
    # No row holds an id that is not text, or that holds NUL (which PostgreSQL refuses even in a WHERE clause).
    if not isinstance(result_id, str) or unstorable_text(result_id):
        raise TaskResultDoesNotExist(result_id)
    for name in sorted(queue_names):
        item = queue_of(name).queue_items().filter(message_id=result_id).first()
        if item is not None:
            return task_result(item)
    raise TaskResultDoesNotExist(result_id)


def queue_of(task_queue_name: str) -> type[TaskMessage]:
    """The message class of a task queue; :class:`NotRegistered`, saying what to install, when it has no table."""
    try:
        return task_queue(task_queue_name)
    except NotRegistered as exc:
        raise NotRegistered(
            f"Task queue {task_queue_name!r} has no table: is 'nexus_queues.contrib.tasks' in INSTALLED_APPS? {exc}"
        ) from exc
