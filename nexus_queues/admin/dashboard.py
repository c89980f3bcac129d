"""The admin's dashboard: every queue the user may view, by category, with its messages per status, health, oldest
Pending message, throughput and live workers, then the latest batches and the live processes; its figures refresh in
place every few seconds. Every figure is read from an index, capped or from the per-minute counts: no page view counts
a whole queue or reads the job runs."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.admin import AdminSite, ModelAdmin
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from ..messages import QueueMessage
from ..models import Batch
from ..overview import QueueOverview, queue_overview
from ..processes import LiveProcess, WorkerProcess, live_processes
from ..registry import registry
from ..throughput import Throughput, per_minute
from .charts import HOUR, SPANS, Span, slots, span_start, throughput_chart
from .queues import QueueItemAdmin, status_badge
from .sites import QUEUES_APP_LABEL, add_to_queues_app, admin_url, dashboard_of, section_of
from .visibility import visible_queues

REFRESH_SECONDS = 5
"""How often the open page fetches its figures again."""
BATCHES_SHOWN = 20
"""The most batches the page lists: the latest not complete, or completed within the span."""


@dataclass(frozen=True)
class QueueRow:
    """One queue's line on the dashboard."""

    name: str
    title: str
    url: str
    overview: QueueOverview
    badges: list[tuple[str, str, int]]
    """(status, its badge, its capped count), each linking to the change list filtered by it."""
    last_hour: Throughput
    workers: list[LiveProcess]
    chart: SafeString

    @property
    def processed_per_minute(self) -> float:
        """Processed messages per minute over the last hour."""
        return self.last_hour.processed / 60

    @property
    def errors_per_minute(self) -> float:
        """Errors per minute over the last hour."""
        return self.last_hour.errors / 60


class Dashboard:
    """The dashboard page of one admin site, whole or filtered to a category."""

    def __init__(self, admin_site: AdminSite) -> None:
        self.admin_site = admin_site

    def get_urls(self) -> list[URLPattern]:
        """The page (with ``?fragment=1``, only its refreshing part), behind the site's login and staff check."""
        return [path("nexus_queues/dashboard/", self.admin_site.admin_view(self.dashboard_view),
                     name="nexus_queues_dashboard")]

    def url(self, category: str = "") -> str:
        """The dashboard, or its page of one category."""
        url = reverse(f"{self.admin_site.name}:nexus_queues_dashboard")
        return f"{url}?{urlencode({'category': category})}" if category else url

    def visible_queues(self, request: HttpRequest) -> list[type[QueueMessage]]:
        """The queues on this site the user may view."""
        return visible_queues(self.admin_site, request)

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        """Every queue the user may view (of ``?category=``), by category; 403 when they may view none, 404 for a
        category without such a queue or an unknown ``?span=``."""
        span = SPANS.get(request.GET.get("span", HOUR.name))
        if span is None:
            raise Http404("The span is hour or day.")
        queues = self.visible_queues(request)
        if not queues and len(registry):
            raise PermissionDenied
        category = request.GET.get("category", "")
        if category:
            queues = [mc for mc in queues if section_of(mc) == category]
            if not queues:
                raise Http404(f"No queue you may view is in {category!r}.")
        context = {**self._context(request, queues, span, timezone.now()), "category": category}
        if request.GET.get("fragment"):
            return TemplateResponse(request, "admin/nexus_queues/dashboard/board.html", context)
        context |= {**self.admin_site.each_context(request), "title": f"{category or 'Queues'}: dashboard",
                    "app_label": QUEUES_APP_LABEL, "refresh_seconds": REFRESH_SECONDS,
                    "spans": [(s, self._span_url(category, s)) for s in SPANS.values()]}
        return TemplateResponse(request, "admin/nexus_queues/dashboard/page.html", context)

    def index_entry(self, request: HttpRequest) -> dict[str, Any] | None:
        """The "Dashboard" line of the index's Queues section, None when the user may view no queue."""
        if not self.visible_queues(request):
            return None
        return {
            "model": None, "name": "Dashboard", "object_name": "Dashboard", "admin_url": self.url(), "add_url": None,
            "view_only": True, "perms": {"add": False, "change": False, "delete": False, "view": True},
        }

    def _context(self, request: HttpRequest, queues: list[type[QueueMessage]], span: Span,
                 now: datetime) -> dict[str, Any]:
        processes = live_processes((mc.queue_options.database for mc in queues), now)
        names = {mc.queue_name() for mc in queues}
        shown = [p for p in processes if p.queues & names or p.process.dispatches]
        grouped: dict[str, list[QueueRow]] = defaultdict(list)
        for message_class in sorted(queues, key=lambda mc: mc.queue_options.title.lower()):
            grouped[section_of(message_class)].append(self._row(message_class, span, processes, now))
        return {
            "sections": sorted(grouped.items(), key=lambda section: section[0].lower()), "span": span, "now": now,
            "processes": [(p, sorted(p.queues & names)) for p in shown],
            "processes_url": self._processes_url(request),
            "batches": self._batches(queues, span_start(span, now)),
        }

    def _batches(self, queues: list[type[QueueMessage]], since: datetime) -> list[tuple[Batch, str]]:
        """The latest batches of ``queues`` not complete, or completed since ``since``, each with its messages' URL."""
        by_alias: dict[str, list[type[QueueMessage]]] = defaultdict(list)
        for message_class in queues:
            by_alias[message_class.queue_options.database].append(message_class)
        found: list[tuple[Batch, str]] = []
        for alias, classes in by_alias.items():
            urls = {mc.queue_name(): admin_url(self.admin_site, mc.queue_model, "changelist") for mc in classes}
            recent = Q(completed_at__isnull=True) | Q(completed_at__gte=since)
            batches = Batch.objects.using(alias).filter(recent, queue__in=urls).order_by("-pk")[:BATCHES_SHOWN]
            found += [(batch, f"{urls[batch.queue]}?batch={batch.pk}") for batch in batches]
        return sorted(found, key=lambda pair: pair[0].created_at, reverse=True)[:BATCHES_SHOWN]

    def _row(self, message_class: type[QueueMessage], span: Span, processes: list[LiveProcess],
             now: datetime) -> QueueRow:
        name = message_class.queue_name()
        limit = getattr(self._admin_of(message_class), "count_limit", QueueItemAdmin.count_limit)
        overview = queue_overview(message_class, limit)
        since = span_start(max(span, HOUR, key=lambda s: s.length), now)
        minutes = per_minute(name, since, using=message_class.queue_options.database)
        url = admin_url(self.admin_site, message_class.queue_model, "changelist")
        return QueueRow(
            name=name, title=message_class.queue_options.title, url=url, overview=overview,
            badges=[(s, status_badge(s), n) for s, n in overview.counts.items()],
            last_hour=_sum(minutes, span_start(HOUR, now)),
            workers=[p for p in processes if name in p.queues and p.process.kind == "worker"],
            chart=throughput_chart(slots(minutes, span, now), span),
        )

    def _admin_of(self, message_class: type[QueueMessage]) -> ModelAdmin | None:
        model = message_class.queue_model
        return self.admin_site.get_model_admin(model) if self.admin_site.is_registered(model) else None

    def _span_url(self, category: str, span: Span) -> str:
        query = {**({"category": category} if category else {}), **({"span": span.name} if span != HOUR else {})}
        return f"{self.url()}?{urlencode(query)}" if query else self.url()

    def _processes_url(self, request: HttpRequest) -> str:
        site = self.admin_site
        if not site.is_registered(WorkerProcess):
            return ""
        if not site.get_model_admin(WorkerProcess).has_view_permission(request):
            return ""
        return reverse(f"{site.name}:nexus_queues_workerprocess_changelist")


def _sum(minutes: dict[datetime, Throughput], since: datetime) -> Throughput:
    return sum((counts for minute, counts in minutes.items() if minute >= since), Throughput())


def add_dashboard(site: AdminSite) -> Dashboard:
    """Serve the dashboard on ``site`` (once) and list it in the index's Queues section."""
    served = dashboard_of(site)
    if served is not None:
        return served
    dashboard = Dashboard(site)
    site_urls, site_app_list = site.get_urls, site.get_app_list

    def get_urls() -> list[URLPattern | URLResolver]:
        # Before the site's own, whose last pattern catches every URL.
        return [*dashboard.get_urls(), *site_urls()]

    def get_app_list(request: HttpRequest, app_label: str | None = None) -> list[dict[str, Any]]:
        app_list = site_app_list(request, app_label)
        entry = dashboard.index_entry(request) if app_label in (None, QUEUES_APP_LABEL) else None
        return add_to_queues_app(app_list, entry, dashboard.url()) if entry else app_list

    site.get_urls = get_urls  # type: ignore[method-assign]
    site.get_app_list = get_app_list  # type: ignore[method-assign]
    site.dashboard = dashboard  # type: ignore[attr-defined]
    return dashboard

