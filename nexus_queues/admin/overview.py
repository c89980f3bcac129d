"""What the admin shows about a queue as a whole: statuses, counts, health, settings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Min, QuerySet

from ..counting import count_up_to
from ..health import QueueHealth, queue_health
from ..messages import QueueMessage
from ..status import SETTABLE_STATUSES, Status
from ..updates import default_status

MAX_STATUS_SUGGESTIONS = 50
"""Status fields suggest at most this many statuses found in the table."""


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


def status_suggestions(found: Iterable[str], *more: str) -> list[str]:
    """What a status field suggests: the settable built-in statuses, then the custom ones among ``found`` and
    ``more`` (e.g. the queue's default status), in order."""
    custom = {s for s in (*found, *more) if s not in set(Status)}
    return [*SETTABLE_STATUSES, *sorted(custom)]


def queue_status_suggestions(message_class: type[QueueMessage]) -> list[str]:
    """The suggestions for a status field of the queue: built-in statuses and the custom ones in its table."""
    rows = message_class.queue_items()
    return status_suggestions(present_statuses(rows, MAX_STATUS_SUGGESTIONS), default_status(message_class))


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
    rows = message_class.queue_items()
    counts: dict[str, int] = {s: count_up_to(rows.filter(status=s), limit) for s in present_statuses(rows)}
    oldest = rows.filter(status=Status.PENDING).order_by("id").values("created_at", "updated_at").first()
    return QueueOverview(
        counts=counts,
        health=queue_health(message_class, limit=limit) if options.health_check else None,
        oldest_pending_at=oldest["created_at"] if oldest else None,
        default_status=default_status(message_class),
        processing_enabled=message_class.queue_settings().processing_enabled(),
    )

