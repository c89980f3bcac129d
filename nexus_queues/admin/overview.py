"""What the admin shows about a queue as a whole: statuses, counts, health, settings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Min, QuerySet

from ..messages import HealthStatus, QueueMessage
from ..models import QueueSettings
from ..status import Status
from ..updates import default_status
from .counting import count_up_to

_UNHEALTHY_STATUSES = (Status.ERROR, Status.ABANDONED)


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
class Health:
    """A queue's health status and why."""

    status: str
    reason: str


def queue_health(message_class: type[QueueMessage], counts: dict[str, int]) -> Health:
    """The queue's health by its policy: Error or Abandoned messages make it ``health_status_when_errors``."""
    options = message_class.queue_options
    if not options.health_check:
        return Health("not checked", "health_check is off for this queue")
    bad = [f"{counts[s]} {s}" for s in _UNHEALTHY_STATUSES if counts.get(s)]
    if not bad:
        return Health(HealthStatus.HEALTHY, "no Error or Abandoned messages")
    return Health(options.health_status_when_errors, f"{' and '.join(bad)} message(s)")


@dataclass(frozen=True)
class QueueOverview:
    """The figures and settings shown above a queue's change list."""

    counts: dict[str, int]
    health: Health
    oldest_pending_at: datetime | None
    """When the oldest Pending message was created (its age is how far the queue lags)."""
    default_status: str
    processing_enabled: bool


def queue_overview(message_class: type[QueueMessage], limit: int) -> QueueOverview:
    """Counts per status (each counted up to ``limit``), health, oldest Pending age and settings."""
    database = message_class.queue_options.database
    rows = message_class.model.objects.using(database)
    counts: dict[str, int] = {s: count_up_to(rows.filter(status=s), limit) for s in present_statuses(rows)}
    oldest = rows.pending().order_by("id").values_list("created_at", flat=True).first()
    stored = QueueSettings.objects.using(database).filter(queue=message_class.queue_name()).first()
    return QueueOverview(
        counts=counts,
        health=queue_health(message_class, counts),
        oldest_pending_at=oldest,
        default_status=default_status(message_class),
        processing_enabled=stored.processing_enabled if stored else True,
    )

