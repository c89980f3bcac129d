"""The row of a task queue: a queue row plus the task's result, and the lease order that honours priority."""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from ...models import QueueItem


class TaskItem(QueueItem):
    """One task: its message (function, arguments, backend), priority and result, in its queue's table."""

    priority = models.SmallIntegerField(default=0, db_default=0)
    return_value = models.JSONField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker_ids = models.JSONField(null=True, blank=True, help_text="host:pid of the worker of each finished attempt")
    errors = models.JSONField(null=True, blank=True, help_text="Each failed attempt's exception class and traceback")

    # Only task tables lease by priority: their status index leads with it, other queues keep (status, id).
    lease_ordering: ClassVar[tuple[str, ...]] = ("-priority", "id")
    admin_class: ClassVar[str] = "nexus_queues.contrib.tasks.admin.TaskItemAdmin"

    class Meta(QueueItem.Meta):
        abstract = True
