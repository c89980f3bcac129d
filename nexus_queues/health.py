"""A queue's health: the per-queue policy, read from its table (no dependency on a health-check library)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.utils import timezone

from .conf import settings
from .counting import count_up_to
from .jobs.queue_jobs import jobs
from .messages import QueueMessage, QueueOptions
from .processes import NEVER, WorkerProcess
from .status import HealthStatus, Status

FAILED = (Status.ERROR, Status.ABANDONED)
COUNT_LIMIT = 10_000
"""Health counts stop here (and read as ``10000+``), so a check never scans a big queue whole."""
CONSUMERS_SHOWN = 10
"""The troubled consumers a queue's health names at most."""
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
    sleeping_wait: timedelta | None = None
    """How long the Sleeping message due first has been Sleeping (None: none sleeps)."""
    no_worker_for: timedelta | None = None
    """How long no live worker has served the queue (:data:`~nexus_queues.processes.NEVER`: none seen); None when
    one is live, or when it was not looked up (its Pending messages waited less than the grace time)."""
    no_dispatch_for: timedelta | None = None
    """The same for a dispatch loop, looked up when a Sleeping message has waited longer than the grace time."""
    no_job: bool = False
    """No job processes the queue: its Pending messages wait for ever."""
    consumers: tuple[tuple[HealthStatus, str], ...] = ()
    """The live consumers storing into the queue that reported trouble at their last heartbeat: each one's health
    and why (the invalid bodies it holds, and why ``<from>.invalid`` refused them)."""


@dataclass(frozen=True)
class QueueHealth:
    """A queue's health status and the reasons for it (empty when healthy)."""

    status: HealthStatus
    reasons: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """The reasons as one line."""
        return "; ".join(self.reasons) or "OK"


def evaluate(state: QueueState, options: QueueOptions, grace: timedelta | None = None) -> QueueHealth:
    """Apply the queue's policy: failed messages give ``health_status_when_errors``; a Pending count
    or wait above the queue's threshold gives unhealthy, as do Pending messages no job processes, Pending messages
    without a live worker and Sleeping
    ones without a live dispatch loop for longer than ``grace`` (``HEALTH_NO_WORKER_GRACE``); a live consumer storing
into the queue gives the health it reported (degraded while it holds invalid bodies). The worst status wins."""
    grace = settings.HEALTH_NO_WORKER_GRACE if grace is None else grace
    findings: list[tuple[HealthStatus, str]] = [
        (HealthStatus.UNHEALTHY, reason) for reason in _unserved(state, options, grace)
    ]
    findings.extend(state.consumers)
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
    Pending threshold), and the waits are those of the message first in line, not a scan of every row. The live
    workers (or dispatch loops) are looked up only when a message has waited longer than ``HEALTH_NO_WORKER_GRACE``,
    one indexed query each; the live consumers that reported trouble, always, one indexed query."""
    now = now or timezone.now()
    options = message_class.queue_options
    rows = message_class.queue_items()
    pending = rows.pending()
    first_in_line = rows.in_line().values_list("updated_at", flat=True).first()
    first_due = rows.sleeping().order_by("process_at").values_list("updated_at", flat=True).first()
    state = QueueState(
        failed=count_up_to(rows.filter(status__in=FAILED), limit),
        pending=count_up_to(pending, max(limit, (options.health_max_pending or 0) + 1)),
        oldest_pending_wait=None if first_in_line is None else now - first_in_line,
        sleeping_wait=None if first_due is None else now - first_due,
        no_job=message_class.queue_name() not in jobs,
        consumers=_troubled_consumers(message_class, now),
    )
    if not _needs_worker(message_class):
        return state
    processes = WorkerProcess.objects.using(options.database)
    grace = settings.HEALTH_NO_WORKER_GRACE
    if state.oldest_pending_wait is not None and state.oldest_pending_wait > grace:
        state = replace(state, no_worker_for=processes.serving(options.queue).absent_for(now))
    if state.sleeping_wait is not None and state.sleeping_wait > grace:
        state = replace(state, no_dispatch_for=processes.dispatching().absent_for(now))
    return state


def queue_health(
    message_class: type[QueueMessage], now: datetime | None = None, *, limit: int = COUNT_LIMIT
) -> QueueHealth:
    """The queue's health now."""
    return evaluate(queue_state(message_class, now, limit=limit), message_class.queue_options)


def _troubled_consumers(message_class: type[QueueMessage], now: datetime) -> tuple[tuple[HealthStatus, str], ...]:
    processes = WorkerProcess.objects.using(message_class.queue_options.database)
    troubled = processes.live(now).consuming(message_class.queue_name()).troubled().order_by("host", "pid")
    found = troubled.values_list("health", "health_reason", "host", "pid")[:CONSUMERS_SHOWN]
    return tuple((HealthStatus(health), f"consumer {host}:{pid}: {reason}") for health, reason, host, pid in found)


def _needs_worker(message_class: type[QueueMessage]) -> bool:
    """Does the queue's health look for live workers? Not when it opted out, nor when no job processes it."""
    return message_class.queue_options.health_needs_worker and message_class.queue_name() in jobs


def _unserved(state: QueueState, options: QueueOptions, grace: timedelta) -> list[str]:
    """The reasons why messages wait for a process that is not there (the waits and absences past ``grace``)."""
    if not options.health_needs_worker:
        return []
    reasons = []
    if state.no_job and state.pending:
        reasons.append(f"{state.pending} Pending message(s) but no job processes this queue: nothing will process them")
    if _past(state.oldest_pending_wait, grace) and _past(state.no_worker_for, grace):
        reasons.append(f"Pending messages but no live worker{_for(state.no_worker_for)}")
    if _past(state.sleeping_wait, grace) and _past(state.no_dispatch_for, grace):
        reasons.append(f"Sleeping messages but no live dispatch loop{_for(state.no_dispatch_for)}")
    return reasons


def _past(delta: timedelta | None, grace: timedelta) -> bool:
    return delta is not None and delta > grace


def _for(absence: timedelta | None) -> str:
    return " seen" if absence == NEVER or absence is None else f" for {_duration(absence)}"


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    return f"{seconds // 60} min" if seconds < 7200 else f"{seconds // 3600} h"


def _seconds(delta: timedelta) -> str:
    return f"{int(delta.total_seconds())} s"
