"""The worker's side: a task queue's job runs each leased task and stores its result on its row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from django.utils import timezone

from ..failures import describe
from ..jobs import Outcome, QueueJob
from ..models import QueueItem
from ..serialization import canonical_json
from ..status import Status
from ..worker.runs import worker_name
from .compat import TaskContext, TaskResult, TaskResultStatus, normalize_json, task_finished, task_started
from .items import TaskItem
from .options import BackendOptions
from .queues import MODULE, TaskMessage
from .results import errors_of, task_result


class TaskJob(QueueJob, abstract=True):
    """Runs a task queue's tasks, highest priority first; each one's outcome is its row's status."""

    message_class: ClassVar[type[TaskMessage]]

    def process_batch(self, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
        """Run each task of the batch in lease order; a failure is that task's outcome."""
        ordered = sorted(items, key=lambda item: (-item.priority, item.pk))  # type: ignore[attr-defined]
        return {item.pk: run_task(item) for item in ordered}  # type: ignore[arg-type]


def declare_job(message_class: type[TaskMessage], options: BackendOptions) -> type[TaskJob]:
    """Make the job that runs the queue's tasks in ``nexus_worker``."""
    name = f"{message_class.__name__}Job"
    attrs = {
        "__module__": MODULE, "__qualname__": name, "message_class": message_class,
        "batch_size": options.batch_size, "max_attempts": options.max_attempts, "backoff": options.backoff,
    }
    return type(name, (TaskJob,), attrs)


def run_task(item: TaskItem) -> BaseException | None:
    """Run the row's task, sending the framework's signals; store its result; the exception if it failed."""
    item.started_at = timezone.now()
    item.worker_ids = [*(item.worker_ids or []), worker_name()]
    try:
        result = task_result(item, TaskResultStatus.RUNNING)
    except Exception as exc:  # the task cannot be found: it failed to start
        _store(item, error=exc)
        return exc
    sender = type(result.task.get_backend())
    task_started.send(sender=sender, task_result=result)
    try:
        value = normalize_json(_call(result))
        canonical_json(value, "return value")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        _finish(result, _store(item, error=exc), TaskResultStatus.FAILED)
        task_finished.send(sender=sender, task_result=result)  # in the except block: receivers see exc_info
        return exc
    _finish(result, _store(item, value=value), TaskResultStatus.SUCCESSFUL, value)
    task_finished.send(sender=sender, task_result=result)
    return None


def _call(result: TaskResult) -> Any:
    task = result.task
    if task.takes_context:
        return task.call(TaskContext(task_result=result), *result.args, **result.kwargs)
    return task.call(*result.args, **result.kwargs)


def _store(item: TaskItem, *, value: Any = None, error: BaseException | None = None) -> TaskItem:
    """Write the attempt's result on the row, while this worker still holds its lease."""
    item.finished_at = timezone.now()
    item.return_value = value
    if error is not None:
        details = describe(error)
        item.errors = [*(item.errors or []), {"exception_class_path": details.type, "traceback": details.traceback}]
    columns = ("started_at", "finished_at", "worker_ids", "return_value", "errors")
    type(item).objects.using(item._state.db).filter(
        pk=item.pk, correlation_id=item.correlation_id, status=Status.LEASED
    ).update(**{column: getattr(item, column) for column in columns})
    return item


def _finish(result: TaskResult, item: TaskItem, status: str, value: Any = None) -> None:
    """The in-memory result as the row now says, for the ``task_finished`` receivers."""
    finished: datetime | None = item.finished_at
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", finished)
    object.__setattr__(result, "_return_value", value)
    result.errors[:] = errors_of(item)
