"""What the admin shows about a queue as a whole: statuses, counts, health, settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Min, QuerySet
from django.utils import timezone

from ..health import FAILED, QueueHealth, QueueState, evaluate
from ..messages import QueueMessage
from ..models import QueueSettings
from ..status import Status
from ..updates import default_status
from .counting import count_up_to


def present_statuses(rows: QuerySet) -> list[str]:
    """Every status in the table, in order, one index probe each (a loose index scan on (status, id))."""
    found: list[str] = []
    while True:
        later = rows if not found else rows.filter(status__gt=found[-1])
        status = later.order_by().aggregate(first=Min("status"))["first"]
        if status is None:
            return found
        found.append(status)


@dataclass(frozen=True)
class QueueOverview:
    """The figures and settings shown above a queue's change list."""

    counts: dict[str, int]
    health: QueueHealth | None
    """None when the queue's health check is off."""
    oldest_pending_at: datetime | None
    """When the oldest Pending message was created (its age is how far the queue lags)."""
    default_status: str
    processing_enabled: bool


def queue_overview(message_class: type[QueueMessage], limit: int) -> QueueOverview:
    """Counts per status (each counted up to ``limit``), health, oldest Pending message and settings."""
    options = message_class.queue_options
    rows = message_class.model.objects.using(options.database)
    counts: dict[str, int] = {s: count_up_to(rows.filter(status=s), limit) for s in present_statuses(rows)}
    oldest = rows.filter(status=Status.PENDING).order_by("id").values("created_at", "updated_at").first()
    stored = QueueSettings.objects.using(options.database).filter(queue=message_class.queue_name()).first()
    return QueueOverview(
        counts=counts,
        health=_health(message_class, rows, counts, oldest, limit) if options.health_check else None,
        oldest_pending_at=oldest["created_at"] if oldest else None,
        default_status=default_status(message_class),
        processing_enabled=stored.processing_enabled if stored else True,
    )


def _health(
    message_class: type[QueueMessage], rows: QuerySet, counts: dict[str, int], oldest: Mapping[str, Any] | None,
    limit: int,
) -> QueueHealth:
    # The health checks' policy on cheap figures: the Pending count only as exact as the threshold needs,
    # the wait of the message first in line rather than a scan of every Pending row.
    max_pending = message_class.queue_options.health_max_pending
    pending = 0
    if max_pending is not None:
        pending = count_up_to(rows.filter(status=Status.PENDING), max(limit, max_pending + 1))
    state = QueueState(
        failed=sum(counts.get(s, 0) for s in FAILED),
        pending=pending,
        oldest_pending_wait=timezone.now() - oldest["updated_at"] if oldest else None,
    )
    return evaluate(state, message_class.queue_options)
