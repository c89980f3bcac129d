"""A queue's health: the per-queue policy, read from its table (no dependency on a health-check library)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Min
from django.utils import timezone

from .messages import HealthStatus, QueueMessage, QueueOptions
from .status import Status

FAILED = (Status.ERROR, Status.ABANDONED)
_RANK = {HealthStatus.HEALTHY: 0, HealthStatus.DEGRADED: 1, HealthStatus.UNHEALTHY: 2}


@dataclass(frozen=True)
class QueueState:
    """The figures the health policy looks at."""

    failed: int
    """Messages in Error or Abandoned."""
    pending: int
    oldest_pending_wait: timedelta | None
    """How long the longest-waiting Pending message has been Pending."""


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


def queue_state(message_class: type[QueueMessage], now: datetime | None = None) -> QueueState:
    """Count a queue's failed and Pending messages and find the longest Pending wait (two indexed queries)."""
    now = now or timezone.now()
    rows = message_class.model.objects.using(message_class.queue_options.database)
    failed = rows.filter(status__in=FAILED).count()
    pending = rows.pending().aggregate(count=Count("id"), since=Min("updated_at"))
    wait = None if pending["since"] is None else now - pending["since"]
    return QueueState(failed=failed, pending=pending["count"], oldest_pending_wait=wait)


def queue_health(message_class: type[QueueMessage], now: datetime | None = None) -> QueueHealth:
    """The queue's health now."""
    return evaluate(queue_state(message_class, now), message_class.queue_options)


def _seconds(delta: timedelta) -> str:
    return f"{int(delta.total_seconds())} s"
