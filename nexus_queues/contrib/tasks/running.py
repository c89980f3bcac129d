"""The worker's side: a task queue's job runs each leased task and stores its result on its row."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from django.dispatch import Signal
from django.utils import timezone

from ...backends import backend_for
from ...backends.budget import value_bytes
from ...conf import settings
from ...exceptions import ResultTooLarge
from ...failures import describe
from ...jobs.queue_jobs import Outcome, QueueJob
from ...models import QueueItem
from ...serialization import canonical_json
from ...worker.runs import worker_name
from .compat import TaskContext, TaskResult, TaskResultStatus, normalize_json, task_finished, task_started
from .items import TaskItem
from .options import BackendOptions
from .queues import MODULE, TaskMessage
from .results import errors_of, task_result

logger = logging.getLogger("nexus_queues.tasks")


class TaskJob(QueueJob, abstract=True):
    """Runs a task queue's tasks, highest priority first; each one's outcome is its row's status."""

    message_class: ClassVar[type[TaskMessage]]
    logs_failure_tracebacks = False  # the framework's task_finished receiver logs a failed task's traceback
    saved_fields = ("started_at", "finished_at", "worker_ids", "return_value", "errors")  # the result, on the row

    def __init__(self) -> None:
        self.attempts: list[Attempt] = []

    def process_batch(self, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
        """Run each task of the batch in lease order; a failure is that task's outcome."""
        ordered = sorted(items, key=lambda item: (-item.priority, item.pk))  # type: ignore[attr-defined]
        self.attempts = [run_task(item) for item in ordered]  # type: ignore[arg-type]
        return {attempt.item.pk: attempt.error for attempt in self.attempts}

    def acknowledged(self) -> None:
        """Send ``task_finished`` for each task, its result stored (with its row's outcome, as ``saved_fields``)."""
        for attempt in self.attempts:
            attempt.send_finished()


@dataclass
class Attempt:
    """One run of a task: its row with the result, the result as the worker saw it end (None if the task could not
    start), and its error."""

    item: TaskItem
    result: TaskResult | None
    error: BaseException | None

    def send_finished(self) -> None:
        """Send ``task_finished``; a failure's exception is being handled then, as receivers (the framework's log)
        expect of the signal."""
        if self.result is None:
            return
        if self.error is None:
            _send(task_finished, self.result)
            return
        try:
            raise self.error
        except BaseException:
            _send(task_finished, self.result)


def declare_job(message_class: type[TaskMessage], options: BackendOptions) -> type[TaskJob]:
    """Make the job that runs the queue's tasks in ``nexus_worker``."""
    name = f"{message_class.__name__}Job"
    attrs = {
        "__module__": MODULE, "__qualname__": name, "message_class": message_class,
        "batch_size": options.batch_size, "max_attempts": options.max_attempts, "backoff": options.backoff,
    }
    return type(name, (TaskJob,), attrs)


def run_task(item: TaskItem) -> Attempt:
    """Run the row's task, sending ``task_started``; its result is on ``item``, to be stored with the run."""
    item.started_at = timezone.now()
    item.worker_ids = [*(item.worker_ids or []), worker_name()]
    try:
        result = task_result(item, TaskResultStatus.RUNNING)
    except Exception as exc:  # the task cannot be found: it failed to start
        return Attempt(_ended(item, error=exc), None, exc)
    _send(task_started, result)
    try:
        value = normalize_json(_call(result))
        canonical_json(value, "return value")
        check_result_size(item, value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        _finish(result, _ended(item, error=exc), TaskResultStatus.FAILED)
        return Attempt(item, result, exc)
    _finish(result, _ended(item, value=value), TaskResultStatus.SUCCESSFUL, value)
    return Attempt(item, result, None)


def check_result_size(item: TaskItem, value: Any) -> None:
    """:class:`ResultTooLarge` when ``value`` takes more than ``TASK_RESULT_MAX_BYTES`` or than the row's
    database takes in a statement: stored, it would fail the acknowledgement of the whole batch."""
    text = json.dumps(value)  # as the JSON field writes it
    size = len(text)  # ASCII: non-ASCII characters are escaped
    setting = settings.TASK_RESULT_MAX_BYTES
    if setting is not None and size > setting:
        raise ResultTooLarge(size, setting, "TASK_RESULT_MAX_BYTES")
    budget = backend_for(item._state.db or "default").budget()
    if not budget.fits(value_bytes(text)):
        raise ResultTooLarge(value_bytes(text), budget.row_bytes or 0, budget.limit)


def _call(result: TaskResult) -> Any:
    task = result.task
    if task.takes_context:
        return task.call(TaskContext(task_result=result), *result.args, **result.kwargs)
    return task.call(*result.args, **result.kwargs)


def _ended(item: TaskItem, *, value: Any = None, error: BaseException | None = None) -> TaskItem:
    """The row with the attempt's end: its time, return value or error."""
    item.finished_at = timezone.now()
    item.return_value = value
    if error is not None:
        details = describe(error)
        item.errors = [*(item.errors or []), {"exception_class_path": details.type, "traceback": details.traceback}]
    return item


def _finish(result: TaskResult, item: TaskItem, status: str, value: Any = None) -> None:
    """The in-memory result as the row now says, for the ``task_finished`` receivers."""
    finished: datetime | None = item.finished_at
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", finished)
    object.__setattr__(result, "_return_value", value)
    result.errors[:] = errors_of(item)


def _send(signal: Signal, result: TaskResult) -> None:
    """Send a task signal; a receiver that raises is logged, and cannot change the task's outcome."""
    for receiver, response in signal.send_robust(type(result.task.get_backend()), task_result=result):
        if isinstance(response, Exception):
            logger.error(
                "Receiver %r of a task signal raised for task %s; the task's outcome stands.", receiver, result.id,
                exc_info=response, extra={"action": "receiver_failed"},
            )
