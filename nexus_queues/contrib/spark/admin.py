"""The syncs in the admin: what each stored, or why it failed. Read-only: Spark writes them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import router
from django.http import HttpRequest, HttpResponse

from ...admin.visibility import QueueRecordAdmin
from . import drivers
from .models import Sync


@admin.register(Sync)
class SyncAdmin(QueueRecordAdmin):
    """Spark syncs, newest first; a user sees the syncs of the queues they may view."""

    list_display = (
        "id", "queue", "stream", "batch_id", "state", "started_at", "finished_at",
        "new", "changed", "unchanged", "scheduled", "rejected", "queue_batch", "path",
    )  # fmt: skip
    list_filter = ("state", "path", "queue")
    list_select_related = ("queue_batch",)
    search_fields = ("queue", "stream")
    date_hierarchy = "started_at"

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        drivers.settle(router.db_for_read(Sync))  # a sync whose driver died is shown failed, not running
        return super().changelist_view(request, extra_context)
