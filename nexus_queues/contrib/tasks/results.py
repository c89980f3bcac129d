"""A task's row read as the framework's ``TaskResult``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import SuspiciousOperation
from django.utils.module_loading import import_string

from ...models import JobRun
from ...status import Status
from .compat import Task, TaskError, TaskResult, TaskResultStatus

if TYPE_CHECKING:
    from .items import TaskItem

STATUSES: dict[str, TaskResultStatus] = {
    Status.PENDING: TaskResultStatus.READY,
    Status.SLEEPING: TaskResultStatus.READY,
    Status.LEASED: TaskResultStatus.RUNNING,
    Status.PROCESSED: TaskResultStatus.SUCCESSFUL,
    Status.ERROR: TaskResultStatus.FAILED,
    Status.ABANDONED: TaskResultStatus.FAILED,
    Status.CANCELLED: TaskResultStatus.FAILED,  # the framework has no cancelled state: it will not run
}
"""The framework's status of each built-in status; any other (an operator's ``OnHold``) waits: READY."""


def task_of(item: TaskItem) -> Task:
    """The row's ``@task``, with the priority, queue, run_after and backend it was enqueued with."""
    message = item.message
    task = import_string(message.task)
    if not isinstance(task, Task):
        raise SuspiciousOperation(f"Task {message.id} does not point to a Task ({message.task}).")
    return task.using(
        priority=item.priority, queue_name=item.message_class.task_queue_name,  # type: ignore[attr-defined]
        run_after=message.run_after, backend=message.backend,
    )


def task_result(item: TaskItem, status: Any = None) -> TaskResult:
    """The row as a ``TaskResult`` (in ``status`` if given); a running attempt counts with its worker."""
    message = item.message
    started_at, worker_ids = item.started_at, list(item.worker_ids or [])
    if item.status in (Status.LEASED, Status.ABANDONED) and len(worker_ids) < item.attempts:
        started_at, worker = _attempt(item)
        worker_ids.append(worker)
    result: TaskResult = TaskResult(
        task=task_of(item), id=message.id, status=status or STATUSES.get(item.status, TaskResultStatus.READY),
        enqueued_at=item.created_at, started_at=started_at, finished_at=item.finished_at,
        last_attempted_at=started_at, args=message.args, kwargs=message.kwargs, backend=message.backend,
        errors=errors_of(item), worker_ids=worker_ids,
    )
    object.__setattr__(result, "_return_value", item.return_value)
    return result


def errors_of(item: TaskItem) -> list[TaskError]:
    """The row's failed attempts as the framework's ``TaskError`` objects."""
    return [TaskError(**error) for error in item.errors or []]


def _attempt(item: TaskItem) -> tuple[Any, str]:
    """When the unfinished attempt began and who runs it, from the job run that leased the row."""
    run = (
        JobRun.objects.using(item._state.db).filter(correlation_id=item.correlation_id)
        .values_list("started_at", "worker").first()
    )
    return run if run is not None else (item.updated_at, "")
