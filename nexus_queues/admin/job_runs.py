"""Job runs, read-only: what each run leased and what became of it, with a link to its messages."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from ..exceptions import NotRegistered
from ..models import JobRun
from ..registry import registry
from .changelist import CheckedChangeList


class JobRunAdmin(admin.ModelAdmin):
    """Browse job runs by queue, job, time and correlation id."""

    list_display = ("started_at", "finished_at", "job", "queue", "correlation_id", "leased", "processed", "errors",
                    "rescheduled", "worker")
    list_filter = ("queue", "job", ("started_at", admin.DateFieldListFilter))
    search_fields = ("=correlation_id", "job")
    readonly_fields = ("messages",)
    show_full_result_count = False

    @admin.display(description="messages it leased")
    def messages(self, run: JobRun) -> str:
        try:
            model = registry.get(run.queue).queue_model
            url = reverse(f"{self.admin_site.name}:{model._meta.app_label}_{model._meta.model_name}_changelist")
        except (NotRegistered, NoReverseMatch):
            return "-"
        return format_html('<a href="{}?correlation_id={}">{} messages with correlation id {}</a>',
                           url, run.correlation_id, run.queue, run.correlation_id)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[CheckedChangeList]:
        return CheckedChangeList

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: JobRun | None = None) -> bool:
        return False
