"""The syncs in the admin: what each stored, or why it failed. Read-only: Spark writes them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import router
from django.http import HttpRequest, HttpResponse

from . import drivers
from .models import Sync


@admin.register(Sync)
class SyncAdmin(admin.ModelAdmin):
    """Spark syncs, newest first."""

    list_display = (
        "id", "queue", "stream", "batch_id", "state", "started_at", "finished_at",
        "new", "changed", "unchanged", "scheduled", "rejected", "queue_batch",
    )  # fmt: skip
    list_filter = ("state", "queue")
    list_select_related = ("queue_batch",)
    search_fields = ("queue", "stream")
    date_hierarchy = "started_at"

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        drivers.settle(router.db_for_read(Sync))  # a sync whose driver died is shown failed, not running
        return super().changelist_view(request, extra_context)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
