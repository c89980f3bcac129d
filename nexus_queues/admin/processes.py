"""The live workers, read-only: each worker, dispatch and consumer process, its queues, state and what it is doing
(a consumer's invalid bodies held, and why)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from ..models import WorkerProcess
from .changelist import RecordAdmin
from .job_runs import with_seconds


class WorkerProcessAdmin(RecordAdmin):
    """Worker, dispatch and consumer processes, newest first: live (green), stopped (grey) or gone (red)."""

    list_display = ("kind", "address", "queue_names", "state_label", "started", "last_seen", "doing_now", "version")
    list_filter = ("kind", "host")
    search_fields = ("host", "=pid", "queues__queue")
    show_full_result_count = False

    @admin.display(description="host:pid", ordering="host")
    def address(self, process: WorkerProcess) -> str:
        return f"{process.host}:{process.pid}"

    @admin.display(description="queues")
    def queue_names(self, process: WorkerProcess) -> str:
        names = ", ".join(sorted(q.queue for q in process.queues.all())) or "-"
        return f"{names} (and dispatch)" if process.dispatches and process.kind == "worker" else names

    @admin.display(description="state")
    def state_label(self, process: WorkerProcess) -> str:
        state = process.state(timezone.now())
        return format_html('<span class="nexus-process nexus-process-{}">{}</span>', state, state)

    @admin.display(description="started at", ordering="started_at")
    def started(self, process: WorkerProcess) -> str:
        return with_seconds(process.started_at)

    @admin.display(description="last seen", ordering="last_seen_at")
    def last_seen(self, process: WorkerProcess) -> str:
        ago = int((timezone.now() - process.last_seen_at).total_seconds())
        return format_html('{} <span class="quiet">({} s ago)</span>', with_seconds(process.last_seen_at), ago)

    @admin.display(description="doing")
    def doing_now(self, process: WorkerProcess) -> str:
        if process.health_reason:
            return format_html('{} <span class="nexus-held nexus-held-{}">({})</span>', process.doing, process.health,
                               process.health_reason)
        if not process.runs:
            return process.doing
        return format_html_join(", ", "{} <a href=\"{}\">{}</a>", (
            (run.get("queue", ""), self._run_url(run.get("correlation_id", "")), run.get("correlation_id", "")[:8])
            for run in process.runs
        ))

    def _run_url(self, correlation_id: str) -> str:
        try:
            return f"{reverse(f'{self.admin_site.name}:nexus_queues_jobrun_changelist')}?q={correlation_id}"
        except NoReverseMatch:
            return "#"

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkerProcess]:
        return super().get_queryset(request).prefetch_related("queues")


    def has_delete_permission(self, request: HttpRequest, obj: WorkerProcess | None = None) -> bool:
        return False
