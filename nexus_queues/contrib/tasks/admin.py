"""The admin of a task queue: the queue admin, with each task's call and result in the list and on its page."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.text import Truncator

from ...admin.forms import QueueItemForm
from ...admin.job_runs import with_seconds
from ...admin.queues import SHORT_ID_LENGTH, QueueItemAdmin, pretty_json, stacked_time
from .items import TaskItem
from .results import task_of

ARGUMENTS_LENGTH = 60
"""The change list shows this much of a task's arguments; the whole call is the cell's title."""
RESULT_FIELDS = ("priority", "return_value_json", ("started_at_text", "finished_at_text"), "worker_ids_text",
                 "errors_list")


def call_summary(data: Any) -> tuple[str, str]:
    """A stored task message's path and its arguments as a call: ``("app.tasks.add", "(2, b=3)")``."""
    if not isinstance(data, dict):
        return "?", json.dumps(data, ensure_ascii=False)
    args, kwargs = data.get("args"), data.get("kwargs")
    values = [json.dumps(value, ensure_ascii=False) for value in (args if isinstance(args, list) else [])]
    values += [f"{key}={json.dumps(value, ensure_ascii=False)}"
               for key, value in (kwargs if isinstance(kwargs, dict) else {}).items()]
    return str(data.get("task", "?")), f"({', '.join(values)})"


def result_id_of(search_term: str) -> str | None:
    """The search term as a result id (the backend's UUID, in the form stored), or None when it is other text."""
    try:
        return str(uuid.UUID(search_term.strip()))
    except ValueError:
        return None


class TaskItemForm(QueueItemForm):
    """A stored task: an edited message must still name a task its backend can run (so ``get_result`` can read it)."""

    def clean_message(self) -> Any:
        data = super().clean_message()
        if "message" in self.changed_data:
            edited = copy.copy(self.instance)
            edited.message = data
            try:
                task_of(edited)
            # Importing the task's module runs its code: whatever it raises means the task cannot run.
            except Exception as exc:
                raise forms.ValidationError(f"Not a task this queue's backend can run: {exc}") from exc
        return data


class TaskItemAdmin(QueueItemAdmin):
    """A task queue's rows: each task's call, priority and times in the list, its result on its page."""

    form = TaskItemForm
    # No job run column: the lease is on the task's page, and the three times need the room.
    list_display = ("id", "result_id", "status_label", "call", "priority", "enqueued", "started", "finished")
    search_fields = ("message",)
    search_help_text = "A result id (exact), or text in the task's message: its path, its arguments."
    fieldsets = (
        QueueItemAdmin.fieldsets[0],
        ("Result", {"fields": RESULT_FIELDS}),
        *(
            (name, {**options, "classes": ("collapse",)}) if name == "Error" else (name, options)
            for name, options in QueueItemAdmin.fieldsets[1:]
        ),
    )
    readonly_fields = (
        *QueueItemAdmin.readonly_fields, "priority", "return_value_json", "started_at_text", "finished_at_text",
        "worker_ids_text", "errors_list",
    )

    @admin.display(description="result id", ordering="message_id")
    def result_id(self, item: TaskItem) -> str:
        """The start of the result id; the whole id is its title."""
        short = Truncator(item.message_id or "").chars(SHORT_ID_LENGTH + 1)
        return format_html('<span class="nexus-result-id" title="{}">{}</span>', item.message_id, short)

    @admin.display(description="task")
    def call(self, item: TaskItem) -> str:
        """The task's path, which a narrow column breaks after a dot, and its arguments below it."""
        path, arguments = call_summary(item._meta.get_field("message").value_from_object(item))
        breakable = format_html_join(mark_safe(".<wbr>"), "{}", ((part,) for part in path.split(".")))
        return format_html('<span class="nexus-task" title="{}{}">{}</span><span class="nexus-task-args">{}</span>',
                           path, arguments, breakable, Truncator(arguments).chars(ARGUMENTS_LENGTH))

    @admin.display(description="enqueued", ordering="created_at")
    def enqueued(self, item: TaskItem) -> str:
        return stacked_time(item.created_at)

    @admin.display(description="started", ordering="started_at")
    def started(self, item: TaskItem) -> str:
        """When the last attempt started."""
        return stacked_time(item.started_at)

    @admin.display(description="finished", ordering="finished_at")
    def finished(self, item: TaskItem) -> str:
        """When the last attempt finished."""
        return stacked_time(item.finished_at)

    @admin.display(description="return value")
    def return_value_json(self, item: TaskItem) -> str:
        return pretty_json(item.return_value)

    # To the second, as the list shows them: tasks are often shorter than a minute.
    @admin.display(description="started at")
    def started_at_text(self, item: TaskItem) -> str:
        return with_seconds(item.started_at)

    @admin.display(description="finished at")
    def finished_at_text(self, item: TaskItem) -> str:
        return with_seconds(item.finished_at)

    @admin.display(description="worker ids")
    def worker_ids_text(self, item: TaskItem) -> str:
        return ", ".join(item.worker_ids or []) or "-"

    @admin.display(description="errors")
    def errors_list(self, item: TaskItem) -> str:
        """Each failed attempt's exception class path and traceback, first to last."""
        if not item.errors:
            return "-"
        return format_html(
            '<ol class="nexus-task-errors">{}</ol>',
            format_html_join("", '<li><code class="nexus-exception-class">{}</code>'
                                 '<pre class="nexus-traceback">{}</pre></li>',
                             ((error.get("exception_class_path", "?"), error.get("traceback", ""))
                              for error in item.errors)),
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Tasks are enqueued by code, ``task.enqueue()``, which checks the task and sends ``task_enqueued``."""
        return False

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        """A result id finds its task through the unique index on message ids; other text is looked for in the
        message JSON (through the trigram index where the project added it)."""
        result_id = result_id_of(search_term)
        if result_id is not None:
            return queryset.filter(message_id=result_id), False
        return super().get_search_results(request, queryset, search_term)
