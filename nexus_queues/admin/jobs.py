"""The admin's jobs page: every queue and periodic job grouped by category, with on/off and "run now"."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from ..conf import settings
from ..exceptions import NotRegistered
from ..jobs.control import (
    Job,
    JobState,
    JobSwitchedOff,
    all_jobs,
    find_job,
    may,
    run_now,
    set_job_enabled,
    state_of,
)
from ..jobs.queue_jobs import QueueJob, jobs
from ..messages import QueueMessage
from ..models import JobRun
from .sites import QUEUES_APP_LABEL, add_to_queues_app, admin_url

UNCATEGORISED = {"queue": "Queues", "periodic": "Periodic jobs"}
"""The section of a job without a category, by kind."""
ACTIONS = ("switch_on", "switch_off", "run_now")


def label_of(job: Job) -> str:
    """The job's readable name: its class's or function's name."""
    return job.__qualname__


def category_of(state: JobState) -> str:
    """The section a job is shown in: its category, or by kind when it has none."""
    return state.category or UNCATEGORISED[state.kind]


@dataclass(frozen=True)
class JobRow:
    """One job's line on the jobs page."""

    state: JobState
    label: str
    category: str
    can_change: bool
    action_url: str
    queue_url: str
    """The queue's change list ("" for a periodic job)."""
    last_run_url: str
    """The last run's admin page ("" when there is none or the user may not view runs)."""


class JobsPage:
    """The jobs page and its POST actions on one admin site."""

    def __init__(self, admin_site: AdminSite) -> None:
        self.admin_site = admin_site

    def get_urls(self) -> list[URLPattern]:
        """The page and the per-job action URL, behind the site's login and staff check."""
        view = self.admin_site.admin_view
        return [
            path("nexus_queues/jobs/", view(self.jobs_view), name="nexus_queues_jobs"),
            path("nexus_queues/jobs/<str:name>/", view(require_POST(self.job_action_view)), name="nexus_queues_job"),
        ]

    def url(self, name: str = "", fragment: str = "") -> str:
        """The jobs page, or one job's action URL; ``fragment`` scrolls to a job."""
        if name:
            return reverse(f"{self.admin_site.name}:nexus_queues_job", args=[name])
        return reverse(f"{self.admin_site.name}:nexus_queues_jobs") + (f"#job-{fragment}" if fragment else "")

    def visible_jobs(self, request: HttpRequest) -> list[Job]:
        """The jobs the user may view."""
        return [job for job in all_jobs() if may(request.user, "view", job)]

    def sections(self, request: HttpRequest) -> list[tuple[str, list[JobRow]]]:
        """The visible jobs' rows by category, categories in alphabetical order."""
        grouped: dict[str, list[JobRow]] = defaultdict(list)
        for job in self.visible_jobs(request):
            row = self._row(request, job)
            grouped[row.category].append(row)
        return sorted(grouped.items(), key=lambda section: section[0].lower())

    def jobs_view(self, request: HttpRequest) -> HttpResponse:
        """Every job the user may view, by category; 403 when there are jobs but none of them."""
        sections = self.sections(request)
        if not sections and all_jobs():
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request), "title": "Jobs", "sections": sections,
            "can_change_any": any(row.can_change for _, rows in sections for row in rows),
            "app_label": QUEUES_APP_LABEL, "time_zone": timezone.get_current_timezone_name(),
        }
        return TemplateResponse(request, "admin/nexus_queues/jobs.html", context)

    def job_action_view(self, request: HttpRequest, name: str) -> HttpResponse:
        """Switch the job on or off, or ask for a run now; 404 for an unknown job, 403 without change permission."""
        try:
            job = find_job(name)
        except NotRegistered:
            raise Http404(f"No job is named {name!r}.") from None
        if not may(request.user, "change", job):
            raise PermissionDenied
        action = request.POST.get("action", "")
        if action not in ACTIONS:
            raise SuspiciousOperation(f"Unknown job action {action!r}.")
        try:
            done = self._do(job, action)
        except JobSwitchedOff:
            # Not the exception's text: it starts with the dotted path, which the admin would capitalise.
            messages.error(request, f"{label_of(job)} is switched off: switch it on to run it.")
        else:
            messages.success(request, done)
        return HttpResponseRedirect(self.url(fragment=name))

    def index_entry(self, request: HttpRequest) -> dict[str, Any] | None:
        """The "Jobs" line of the index's Queues section, None when the user may view no job."""
        visible = self.visible_jobs(request)
        if not visible:
            return None
        view_only = not any(may(request.user, "change", job) for job in visible)
        return {
            "model": None, "name": "Jobs", "object_name": "Jobs", "admin_url": self.url(), "add_url": None,
            "view_only": view_only, "perms": {"add": False, "change": not view_only, "delete": False, "view": True},
        }

    def queue_job_link(self, message_class: type[QueueMessage]) -> str:
        """A link to the queue's job on the jobs page, with its schedule in words; "" when no job processes it."""
        try:
            job = jobs.get(message_class.queue_name())
        except NotRegistered:
            return ""
        timetable = job.get_schedule()
        return format_html('<a href="{}" title="{}">{}</a>: {}', self.url(fragment=job.name()), job.name(),
                           label_of(job), timetable.describe() if timetable else "Continuously")

    def _row(self, request: HttpRequest, job: Job) -> JobRow:
        state = state_of(job)
        return JobRow(
            state=state, label=label_of(job), category=category_of(state),
            can_change=may(request.user, "change", job), action_url=self.url(job.name()),
            queue_url=self._queue_url(job), last_run_url=self._run_url(request, state.last_run),
        )

    def _queue_url(self, job: Job) -> str:
        if not issubclass(job, QueueJob) or not self.admin_site.is_registered(job.message_class.queue_model):
            return ""
        return admin_url(self.admin_site, job.message_class.queue_model, "changelist")

    def _run_url(self, request: HttpRequest, run: JobRun | None) -> str:
        if run is None or not self.admin_site.is_registered(JobRun):
            return ""
        if not self.admin_site.get_model_admin(JobRun).has_view_permission(request, run):
            return ""
        return reverse(f"{self.admin_site.name}:nexus_queues_jobrun_change", args=[run.pk])

    def _do(self, job: Job, action: str) -> str:
        label = label_of(job)
        if action == "run_now":
            run_now(job)
            soon = _within(settings.WORKER_PEEK_DELAY.total_seconds())
            if issubclass(job, QueueJob):
                return f"{label} will drain {job.message_class.queue_name()} {soon} on a worker."
            return f"{label} will run {soon} on a worker."
        set_job_enabled(job, action == "switch_on")
        return f"{label} switched {'on' if action == 'switch_on' else 'off'}."


def add_jobs_page(site: AdminSite) -> None:
    """Serve the jobs page on ``site`` and list it in the index's Queues section."""
    if hasattr(site, "jobs_page"):
        return
    page = JobsPage(site)
    site_urls, site_app_list = site.get_urls, site.get_app_list

    def get_urls() -> list[URLPattern | URLResolver]:
        # Before the site's own, whose last pattern catches every URL.
        return [*page.get_urls(), *site_urls()]

    def get_app_list(request: HttpRequest, app_label: str | None = None) -> list[dict[str, Any]]:
        app_list = site_app_list(request, app_label)
        entry = page.index_entry(request) if app_label in (None, QUEUES_APP_LABEL) else None
        return add_to_queues_app(app_list, entry, page.url()) if entry else app_list

    site.get_urls = get_urls  # type: ignore[method-assign]
    site.get_app_list = get_app_list  # type: ignore[method-assign]
    site.jobs_page = page  # type: ignore[attr-defined]


def jobs_page_of(site: AdminSite) -> JobsPage | None:
    """The jobs page served on ``site``, None when it serves none."""
    return getattr(site, "jobs_page", None)


def _within(seconds: float) -> str:
    return "within a second" if seconds <= 1 else f"within {seconds:g} seconds"
