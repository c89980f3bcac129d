"""A queue at a glance, read from indexes only: its statuses and capped counts, health, oldest Pending message and
settings. The admin's change list and dashboard show it; a metrics exporter can read it too."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Min, QuerySet
from django.utils import timezone

from .counting import count_up_to
from .health import QueueHealth, queue_health
from .limit_usage import LimitUsage, limit_usage
from .messages import QueueMessage
from .updates import default_status


def present_statuses(rows: QuerySet, limit: int | None = None) -> list[str]:
    """Every status in the table (the first ``limit``), in order, one index probe each (a loose index scan on
    (status, id))."""
    found: list[str] = []
    while limit is None or len(found) < limit:
        later = rows if not found else rows.filter(status__gt=found[-1])
        status = later.order_by().aggregate(first=Min("status"))["first"]
        if status is None:
            return found
        found.append(status)
    return found


def status_counts(rows: QuerySet, limit: int) -> dict[str, int]:
    """Messages per status present, in order, each counted up to ``limit`` (an ``AtLeast`` there)."""
    return {status: count_up_to(rows.filter(status=status), limit) for status in present_statuses(rows)}


@dataclass(frozen=True)
class QueueOverview:
    """A queue's figures and settings at one moment."""

    counts: dict[str, int]
    """Messages per status present, each counted up to a limit (an :class:`~nexus_queues.counting.AtLeast` past
    it)."""
    health: QueueHealth | None
    """None when the queue's health check is off."""
    pending_since: datetime | None
    """Since when the Pending message first in line has waited (how far the queue lags: the wait that health and
    the metrics read too); None when none is Pending."""
    default_status: str
    processing_enabled: bool
    limits: LimitUsage | None = None
    """The use of the queue's concurrency and rate limits, and what waits on them; None without limits."""


def queue_overview(message_class: type[QueueMessage], limit: int) -> QueueOverview:
    """Counts per status (each counted up to ``limit``), health, oldest Pending message and settings."""
    options = message_class.queue_options
    rows = message_class.queue_items()
    counts = status_counts(rows, limit)
    first_in_line = rows.in_line().values_list("updated_at", flat=True).first()
    return QueueOverview(
        counts=counts,
        health=queue_health(message_class, limit=limit) if options.health_check else None,
        pending_since=first_in_line,
        default_status=default_status(message_class),
        processing_enabled=message_class.queue_settings().processing_enabled(),
        limits=limit_usage(message_class, timezone.now(), limit),
    )
