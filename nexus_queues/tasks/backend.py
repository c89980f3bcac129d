"""``NexusBackend``: the tasks framework's backend that stores each task in its queue's table."""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from typing import Any

from django.core import checks
from django.db import transaction
from django.utils import timezone

from .. import signals
from ..backends import backend_for
from ..conf import settings
from ..enqueueing import EnqueueResult
from ..exceptions import NotRegistered
from ..serialization import canonical_json, json_hash
from ..status import Status
from .checks import backend_problems
from .compat import (
    BaseTaskBackend,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    normalize_json,
    task_enqueued,
)
from .queues import TaskMessage, task_queue
from .results import task_result


class NexusBackend(BaseTaskBackend):
    """Runs ``@task`` functions on nexus queues: one queue (table, admin, job) per task queue name."""

    supports_defer = True
    """Does the backend support run_after? Yes: the task sleeps until then."""
    supports_async_task = True
    """Does the backend support coroutines? Yes: the worker runs them to completion."""
    supports_get_result = True
    """Can results be read from any process? Yes: a task's row holds its result."""
    supports_priority = True
    """Are tasks run in priority order? Yes: higher priority is leased first, FIFO within a priority."""

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        """Store the task in its queue's table (in the caller's transaction on that database); its result."""
        self.validate_task(task)
        message_class = self._queue(task.queue_name)
        message = message_class(
            id=str(uuid.uuid4()), task=task.module_path, args=_json(args), kwargs=_json(kwargs), backend=self.alias,
            run_after=task.run_after,
        )
        item = self._insert(message_class, message, task)
        result = task_result(item)
        alias = message_class.queue_options.database
        transaction.on_commit(lambda: task_enqueued.send(type(self), task_result=result), using=alias)
        signals.send(signals.enqueued, message_class, alias, result=EnqueueResult(stored=(message,), ids=(item.pk,)))
        return result

    def get_result(self, result_id: str) -> TaskResult:
        """The result of task ``result_id`` as its row says now; ``TaskResultDoesNotExist`` if there is none."""
        for name in sorted(self.queues):
            item = self._queue(name).queue_items().filter(message_id=result_id).first()
            if item is not None:
                return task_result(item)
        raise TaskResultDoesNotExist(result_id)

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """The backend's configuration problems (see :mod:`nexus_queues.tasks.checks`)."""
        return [*super().check(**kwargs), *backend_problems(self)]

    def _queue(self, name: str) -> type[TaskMessage]:
        try:
            return task_queue(name)
        except NotRegistered as exc:
            raise NotRegistered(
                f"Task queue {name!r} has no table: is 'nexus_queues.tasks' in INSTALLED_APPS? {exc}"
            ) from exc

    def _insert(self, message_class: type[TaskMessage], message: TaskMessage, task: Task) -> Any:
        model: Any = message_class.queue_model
        backend = backend_for(message_class.queue_options.database)
        text = canonical_json(message)
        now = timezone.now()
        sleeping = task.run_after is not None
        item = model(
            message_id=message.id, message=message, message_hash=json_hash(text), headers={},
            status=Status.SLEEPING if sleeping else backend.default_status_expression(model),
            process_at=task.run_after, priority=task.priority, created_at=now, updated_at=now,
        )
        notify = settings.NOTIFY and not sleeping
        # One transaction: the wake-up rides on the insert's commit instead of paying for its own.
        with transaction.atomic(using=backend.alias) if notify else nullcontext():
            item.save(using=backend.alias, force_insert=True)
            if notify:
                backend.notify(message_class.queue_name())
        item.status = Status.SLEEPING if sleeping else Status.PENDING  # READY either way: no need to read it back
        return item



def _json(value: Any) -> Any:
    """``value`` as JSON data (tuples become lists), or ``TypeError``/``ValueError`` as the framework raises."""
    return normalize_json(value)
