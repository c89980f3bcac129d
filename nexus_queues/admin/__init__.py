"""The Django admin for queues: one page per queue, grouped by category, plus job runs, worker processes, the jobs
page and the dashboard.

:func:`register_queues` runs from the app's ``ready()`` (after queues are discovered) unless
``NEXUS_QUEUES["ADMIN"]`` is False; call it yourself for another :class:`AdminSite`.
"""

from __future__ import annotations

from django.contrib import admin
from django.utils.module_loading import import_string

from ..conf import settings
from ..models import ApiToken, Batch, JobRun, WorkerProcess
from ..registry import registry
from .batches import BatchAdmin
from .dashboard import Dashboard, add_dashboard
from .job_runs import JobRunAdmin
from .jobs import JobsPage, add_jobs_page
from .processes import WorkerProcessAdmin
from .queues import QueueItemAdmin
from .sites import group_index_by_category, group_queues_by_category
from .tokens import ApiTokenAdmin

__all__ = ["ApiTokenAdmin", "BatchAdmin", "Dashboard", "JobRunAdmin", "JobsPage", "QueueItemAdmin",
           "WorkerProcessAdmin", "autoregister", "group_queues_by_category", "register_queues"]


def register_queues(site: admin.AdminSite) -> None:
    """Register every queue not yet on ``site`` with its model's ``admin_class`` (:class:`QueueItemAdmin`, a task
    queue's ``TaskItemAdmin``), job runs, worker processes, batches, the jobs page and the dashboard (where each
    category of the index links to)."""
    for message_class in registry:
        model = message_class.queue_model
        if not site.is_registered(model):
            site.register(model, import_string(model.admin_class))
    if not site.is_registered(JobRun):
        site.register(JobRun, JobRunAdmin)
    if not site.is_registered(WorkerProcess):
        site.register(WorkerProcess, WorkerProcessAdmin)
    if not site.is_registered(ApiToken):
        site.register(ApiToken, ApiTokenAdmin)
    if not site.is_registered(Batch):
        site.register(Batch, BatchAdmin)
    # First, so that the index's grouping sees the Jobs and Dashboard lines in the Queues section.
    add_jobs_page(site)
    dashboard = add_dashboard(site)
    group_index_by_category(site, dashboard.url)


def autoregister(site: admin.AdminSite | None = None) -> None:
    """Register the queues on ``site`` (Django's default one), unless ``NEXUS_QUEUES["ADMIN"]`` is False."""
    if settings.ADMIN:
        register_queues(site or admin.site)
