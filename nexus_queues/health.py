"""A queue's health: the per-queue policy, read from its table (no dependency on a health-check library)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from .counting import count_up_to
from .messages import HealthStatus, QueueMessage, QueueOptions
from .status import Status

FAILED = (Status.ERROR, Status.ABANDONED)
COUNT_LIMIT = 10_000
"""Health counts stop here (and read as ``10000+``), so a check never scans a big queue whole."""
_RANK = {HealthStatus.HEALTHY: 0, HealthStatus.DEGRADED: 1, HealthStatus.UNHEALTHY: 2}


@dataclass(frozen=True)
class QueueState:
    """The figures the health policy looks at."""

    failed: int
    """Messages in Error or Abandoned (counted up to a limit)."""
    pending: int
    """Pending messages (counted up to a limit, or just past the queue's ``health_max_pending``)."""
    oldest_pending_wait: timedelta | None
    """How long the Pending message first in line has been Pending."""


@dataclass(frozen=True)
class QueueHealth:
    """A queue's health status and the reasons for it (empty when healthy)."""

    status: HealthStatus
    reasons: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """The reasons as one line."""
        return "; ".join(self.reasons) or "OK"


def evaluate(state: QueueState, options: QueueOptions) -> QueueHealth:
    """Apply the queue's policy: failed messages give ``health_status_when_errors``; a Pending count
    or wait above the queue's threshold gives unhealthy. The worst status wins."""
    findings: list[tuple[HealthStatus, str]] = []
    if state.failed:
        findings.append((options.health_status_when_errors, f"{state.failed} message(s) in Error or Abandoned"))
    limit = options.health_max_pending
    if limit is not None and state.pending > limit:
        findings.append((HealthStatus.UNHEALTHY, f"{state.pending} Pending message(s), more than {limit}"))
    max_age = options.health_max_pending_age
    if max_age is not None and state.oldest_pending_wait is not None and state.oldest_pending_wait > max_age:
        waited, limit_text = _seconds(state.oldest_pending_wait), _seconds(max_age)
        findings.append((HealthStatus.UNHEALTHY, f"a message has been Pending for {waited}, longer than {limit_text}"))
    if not findings:
        return QueueHealth(HealthStatus.HEALTHY)
    worst = max((status for status, _ in findings), key=_RANK.__getitem__)
    return QueueHealth(worst, tuple(reason for _, reason in findings))


def queue_state(
    message_class: type[QueueMessage], now: datetime | None = None, *, limit: int = COUNT_LIMIT
) -> QueueState:
    """The health figures, each read from an index and bounded: counts stop at ``limit`` (or just past the
    Pending threshold), and the wait is that of the message first in line, not a scan of every Pending row."""
    now = now or timezone.now()
    options = message_class.queue_options
    rows = message_class.queue_items()
    pending = rows.pending()
    first_in_line = pending.order_by("id").values_list("updated_at", flat=True).first()
    return QueueState(
        failed=count_up_to(rows.filter(status__in=FAILED), limit),
        pending=count_up_to(pending, max(limit, (options.health_max_pending or 0) + 1)),
        oldest_pending_wait=None if first_in_line is None else now - first_in_line,
    )


def queue_health(
    message_class: type[QueueMessage], now: datetime | None = None, *, limit: int = COUNT_LIMIT
) -> QueueHealth:
    """The queue's health now."""
    return evaluate(queue_state(message_class, now, limit=limit), message_class.queue_options)


def _seconds(delta: timedelta) -> str:
    return f"{int(delta.total_seconds())} s"
