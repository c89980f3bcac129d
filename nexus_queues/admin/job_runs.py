"""Job runs, read-only: what each run leased and what became of it, with a link to its messages; a periodic run's
tick, outcome and traceback. A queue job's run belongs to its queue: a user sees the runs of the queues they may view,
and periodic runs when they may view periodic jobs."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.http import urlencode

from ..exceptions import NotRegistered
from ..jobs.control import outcome
from ..jobs.periodic_jobs import periodic_jobs
from ..jobs.queue_jobs import jobs
from ..models import JobRun, PeriodicJobSettings
from ..permissions import may
from ..registry import registry
from .changelist import BigTableChangeList
from .sites import admin_url
from .visibility import QueueRecordAdmin, visible_queues

CORRELATION_ID = re.compile(r"[0-9a-f]{32}")
"""A run's correlation id, as the worker makes it and its log lines show it."""


def with_seconds(moment: datetime | None) -> str:
    """A time in the current time zone to the second (runs on short intervals differ only there); "-" for none."""
    return "-" if moment is None else date_format(timezone.localtime(moment), "Y-m-d H:i:s")


def duration(run: JobRun) -> str:
    """How long the run took ("-" while unfinished)."""
    if run.finished_at is None:
        return "-"
    seconds = (run.finished_at - run.started_at).total_seconds()
    return f"{seconds:.1f} s" if seconds < 60 else f"{seconds // 60:.0f} min {seconds % 60:.0f} s"


def outcome_badge(run: JobRun) -> str:
    """The run's outcome as a coloured label."""
    found = outcome(run)
    return format_html('<span class="nexus-outcome nexus-outcome-{}">{}</span>', found, found)


class RegisteredFilter(admin.SimpleListFilter):
    """Runs by one column's value, the choices from the code's registries: listing the values the runs hold read
    the whole table on every page."""

    def queryset(self, request: HttpRequest, queryset: QuerySet[JobRun]) -> QuerySet[JobRun]:
        value = self.value()
        return queryset.filter(**{str(self.parameter_name): value}) if value else queryset


def sees_periodic_runs(request: HttpRequest) -> bool:
    """May the user view periodic jobs' runs? Whoever may view periodic jobs, as the jobs page shows them."""
    return may(request.user, "view", PeriodicJobSettings)


class QueueFilter(RegisteredFilter):
    title = "queue"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[JobRun]) -> list[tuple[str, str]]:
        names = sorted(c.queue_name() for c in visible_queues(model_admin.admin_site, request))
        return [(name, name) for name in names]


class JobFilter(RegisteredFilter):
    title = "job"
    parameter_name = "job"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[JobRun]) -> list[tuple[str, str]]:
        queues = visible_queues(model_admin.admin_site, request)
        names = {j.name() for j in jobs if j.message_class in queues}
        if sees_periodic_runs(request):
            names |= {j.name() for j in periodic_jobs}
        return [(name, name) for name in sorted(names)]


class JobRunAdmin(QueueRecordAdmin):
    """Browse job runs by queue, job, time and correlation id."""

    # Few, narrow columns, so that the list fits a 1400 px window beside the side bar and the filters.
    # The correlation id is the started time's title there (and searchable).
    list_display = ("started", "took", "job_label", "outcome_label", "queue", "message_counts", "worker_link")
    list_filter = (QueueFilter, JobFilter, ("started_at", admin.DateFieldListFilter))
    search_fields = ("=correlation_id", "job")
    fields = ("job", "queue", "outcome_label", "tick_time", "started", "finished", "worker_link", "correlation_id",
              "leased", "processed", "errors", "rescheduled", "messages", "error_text")
    readonly_fields = ("outcome_label", "tick_time", "started", "finished", "worker_link", "messages", "error_text")
    show_facets = admin.ShowFacets.NEVER  # a count per filter choice, several reading every run, on each page
    count_limit = 10_000
    """The list counts its runs up to this many (it reads one page, and counts only when there is a next one)."""

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[BigTableChangeList]:
        return BigTableChangeList

    def extra_queue_names(self, request: HttpRequest) -> list[str]:
        """Periodic runs (no queue) too, for who may view periodic jobs."""
        return [""] if sees_periodic_runs(request) else []

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[JobRun], search_term: str
    ) -> tuple[QuerySet[JobRun], bool]:
        """A correlation id pasted from a log line is looked up in its unique index: on millions of runs, the search
        of every field (case-insensitive, so no index) read the whole table. Other words search as usual."""
        term = search_term.strip().lower()
        if CORRELATION_ID.fullmatch(term):
            return queryset.filter(correlation_id=term), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="started at", ordering="started_at")
    def started(self, run: JobRun) -> str:
        started = with_seconds(run.started_at)
        return format_html('<span title="correlation id {}">{}</span>', run.correlation_id, started)

    @admin.display(description="finished at", ordering="finished_at")
    def finished(self, run: JobRun) -> str:
        return with_seconds(run.finished_at)

    @admin.display(description="took")
    def took(self, run: JobRun) -> str:
        return duration(run)

    @admin.display(description="messages")
    def message_counts(self, run: JobRun) -> str:
        if not run.queue:
            return "-"
        counts = [f"{run.processed} of {run.leased} processed", f"{run.errors} failed" if run.errors else "",
                  f"{run.rescheduled} later" if run.rescheduled else ""]
        return ", ".join(filter(None, counts))

    @admin.display(description="tick", ordering="tick")
    def tick_time(self, run: JobRun) -> str:
        return with_seconds(run.tick)

    @admin.display(description="job", ordering="job")
    def job_label(self, run: JobRun) -> str:
        return format_html('<span title="{}">{}</span>', run.job, run.job.rsplit(".", 1)[-1])

    @admin.display(description="outcome")
    def outcome_label(self, run: JobRun) -> str:
        return outcome_badge(run)

    @admin.display(description="error")
    def error_text(self, run: JobRun) -> str:
        if not run.error:
            return "-"
        return format_html('<pre class="nexus-traceback">{}</pre>', run.error)

    @admin.display(description="worker", ordering="worker")
    def worker_link(self, run: JobRun) -> str:
        host, _, pid = run.worker.rpartition(":")
        try:
            url = reverse(f"{self.admin_site.name}:nexus_queues_workerprocess_changelist")
        except NoReverseMatch:
            return run.worker
        return format_html('<a href="{}?{}">{}</a>', url, urlencode({"host": host, "pid": pid}), run.worker)

    @admin.display(description="messages it leased")
    def messages(self, run: JobRun) -> str:
        try:
            url = admin_url(self.admin_site, registry.get(run.queue).queue_model, "changelist")
        except (NotRegistered, NoReverseMatch):
            return "-"
        return format_html('<a href="{}?correlation_id={}">{} messages with correlation id {}</a>',
                           url, run.correlation_id, run.queue, run.correlation_id)

