"""Task queues: each task queue name of a nexus backend is a nexus queue (``tasks_<name>``) with its own table."""

from __future__ import annotations

import re
import types
from datetime import datetime, timedelta
from typing import Any, ClassVar

from ...exceptions import ConfigurationError
from ...messages import QueueMessageWithId
from ...models import QueueItem
from ...registry import registry
from .items import TaskItem

QUEUE_PREFIX = "tasks_"
TASK_QUEUE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,33}$")
MODULE = "nexus_queues.contrib.tasks.models"
"""The module, in app ``nexus_tasks``, that the task queues' classes and models belong to."""


class TaskMessage(QueueMessageWithId, abstract=True):
    """A task to run: the path of its ``@task`` function, its JSON arguments and backend; ``id`` is its result's."""

    id: str
    task: str
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    backend: str
    run_after: datetime | None = None

    queue_item_base: ClassVar[type[QueueItem]] = TaskItem  # type: ignore[type-abstract]
    task_queue_name: ClassVar[str]
    """The tasks framework's name of the queue (``default``), without the ``tasks_`` prefix."""

    @property
    def message_id(self) -> str:
        """The task result's id."""
        return self.id


def nexus_queue_name(task_queue_name: str) -> str:
    """The nexus queue of a task queue name: ``default`` -> ``tasks_default``."""
    return QUEUE_PREFIX + task_queue_name


def task_queue(task_queue_name: str) -> type[TaskMessage]:
    """The message class of a declared task queue, or :class:`NotRegistered`."""
    return registry.get(nexus_queue_name(task_queue_name))  # type: ignore[return-value]


def declare(task_queue_name: str, *, keep_results_for: timedelta | None, database: str) -> type[TaskMessage]:
    """Make the task queue's message class (and so its model) in :data:`MODULE`."""
    if not isinstance(task_queue_name, str) or not TASK_QUEUE_NAME.match(task_queue_name):
        raise ConfigurationError(
            f"Task queue name {task_queue_name!r} must be 1-34 characters of lowercase letters, digits and '_', "
            "starting with a letter (its table is nexus_tasks_<name>)."
        )
    name = "".join(part.capitalize() for part in task_queue_name.split("_")) + "Tasks"
    keywords = {
        "queue": nexus_queue_name(task_queue_name), "category": "Tasks", "keep_processed_for": keep_results_for,
        "database": database, "verbose_name": f"Tasks: {task_queue_name}",
    }

    def body(namespace: dict[str, Any]) -> None:
        namespace.update({"__module__": MODULE, "__qualname__": name, "task_queue_name": task_queue_name})

    message_class: type[TaskMessage] = types.new_class(name, (TaskMessage,), keywords, body)  # type: ignore[assignment]
    return message_class
