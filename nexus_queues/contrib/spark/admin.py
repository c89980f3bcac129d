"""The syncs in the admin: what each stored, or why it failed. Read-only: Spark writes them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import Sync


@admin.register(Sync)
class SyncAdmin(admin.ModelAdmin):
    """Spark syncs, newest first."""

    list_display = (
        "id", "queue", "stream", "batch_id", "state", "started_at", "finished_at",
        "new", "changed", "unchanged", "scheduled", "rejected",
    )  # fmt: skip
    list_filter = ("state", "queue")
    search_fields = ("queue", "stream")
    date_hierarchy = "started_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
