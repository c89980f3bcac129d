"""Batches, read-only: each one's progress (pending, processed, error, cancelled), its completion, and a link to its
messages on their queue's page; a user sees the batches of the queues whose pages they may view, and no other
(:class:`~nexus_queues.admin.visibility.QueueRecordAdmin`)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from ..exceptions import NotRegistered
from ..models import Batch
from ..registry import registry
from .job_runs import with_seconds
from .visibility import QueueRecordAdmin


class BatchAdmin(QueueRecordAdmin):
    """Batches, newest first, with their counts; a batch links to its messages."""

    list_display = ("id", "queue", "label", "total", "pending_count", "processed", "error", "cancelled", "state",
                    "created", "completed", "messages")
    list_filter = ("queue",)
    search_fields = ("label", "=id")
    readonly_fields = ("queue", "label", "total", "processed", "error", "cancelled", "completion_queue",
                       "completion_message", "created_at", "closed_at", "completed_at")
    fields = readonly_fields

    @admin.display(description="pending")
    def pending_count(self, batch: Batch) -> int:
        return batch.pending

    @admin.display(description="state")
    def state(self, batch: Batch) -> str:
        state = "completed" if batch.completed_at else "open" if batch.closed_at is None else "running"
        return format_html('<span class="nexus-batch nexus-batch-{}">{}</span>', state, state)

    @admin.display(description="created at", ordering="created_at")
    def created(self, batch: Batch) -> str:
        return with_seconds(batch.created_at)

    @admin.display(description="completed at", ordering="completed_at")
    def completed(self, batch: Batch) -> str:
        return with_seconds(batch.completed_at)

    @admin.display(description="messages")
    def messages(self, batch: Batch) -> str:
        try:
            model = registry.resolve(batch.queue).queue_model
            url = reverse(f"{self.admin_site.name}:{model._meta.app_label}_{model._meta.model_name}_changelist")
        except (NoReverseMatch, NotRegistered):  # a queue no longer defined, or not on this site
            return "-"
        return format_html('<a href="{}?batch={}">{} messages</a>', url, batch.pk, batch.queue)
