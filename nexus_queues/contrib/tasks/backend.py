"""``NexusBackend``: the tasks framework's backend that stores each task in its queue's table."""

from __future__ import annotations

from typing import Any

from django.core import checks

from .checks import backend_problems
from .compat import BaseTaskBackend, Task, TaskResult


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
        from .storage import store_task  # the tables are models: not before the app registry is ready

        self.validate_task(task)
        return store_task(self, task, args, kwargs)

    def get_result(self, result_id: str) -> TaskResult:
        """The result of task ``result_id`` as its row says now; ``TaskResultDoesNotExist`` if there is none."""
        from .storage import find_result  # the tables are models: not before the app registry is ready

        return find_result(self.queues, result_id)

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """The backend's configuration problems (see :mod:`nexus_queues.contrib.tasks.checks`)."""
        return [*super().check(**kwargs), *backend_problems(self)]
