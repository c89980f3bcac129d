"""What a scrape reads: every queue's figures, within a time budget, each read bounded and indexed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count

from ...health import QueueHealth, evaluate, queue_state
from ...limit_usage import LimitUsage, limit_usage
from ...messages import QueueMessage
from ...models import Batch, WorkerProcess, WorkerProcessQueue
from ...overview import status_counts
from ...processes import ProcessKind
from ...status import Status
from ...throughput import Throughput, totals

OPEN_BATCHES = 100
"""The most open batches a scrape reports per database: each is a set of series."""


@dataclass(frozen=True)
class QueueFigures:
    """One queue's messages as its table holds them now."""

    counts: dict[str, int]
    """Messages per status: every built-in one (0 when none) and each custom one present, each counted up to a limit
    (an :class:`~nexus_queues.counting.AtLeast` there)."""
    oldest_pending_wait: timedelta | None
    """How long the Pending message first in line has been Pending; None when none is."""
    health: QueueHealth | None
    """None when the queue's health check is off."""
    limits: LimitUsage | None = None
    """The use of the queue's concurrency and rate limits; None without limits."""


@dataclass(frozen=True)
class Figures:
    """Everything one scrape read."""

    totals: dict[str, Throughput]
    live_workers: dict[str, int]
    """Live worker processes per queue (every queue asked for, 0 when none)."""
    live_dispatch_loops: dict[str, int]
    """Live dispatch loops per database alias holding the queues asked for."""
    open_batches: list[Batch] = field(default_factory=list)
    """The latest batches not yet complete (up to :data:`OPEN_BATCHES` per database), newest first."""
    queues: dict[str, QueueFigures] = field(default_factory=dict)
    """The queues whose table was read within the time budget."""
    skipped: list[str] = field(default_factory=list)
    """The queues left out once the budget was spent."""


def read_figures(
    message_classes: Iterable[type[QueueMessage]], *, now: datetime, budget: timedelta, limit: int,
    clock: Callable[[], float] = time.monotonic,
) -> Figures:
    """The figures of these queues at ``now``. The per-database reads (totals, live processes: one query each) are
    always made; then the queue tables are read one queue after the other until ``budget`` is spent."""
    started = clock()
    classes = list(message_classes)
    figures = _per_database(classes, now)
    for message_class in classes:
        if figures.skipped or clock() - started >= budget.total_seconds():
            figures.skipped.append(message_class.queue_name())
        else:
            figures.queues[message_class.queue_name()] = queue_figures(message_class, now, limit)
    return figures


def queue_figures(message_class: type[QueueMessage], now: datetime, limit: int) -> QueueFigures:
    """The queue's counts per status, its first Pending message's wait and its health."""
    rows = message_class.queue_items()
    state = queue_state(message_class, now)
    health_check = message_class.queue_options.health_check
    counts: dict[str, int] = {status.value: 0 for status in Status}
    counts.update(status_counts(rows, limit))
    return QueueFigures(
        counts=counts,
        oldest_pending_wait=state.oldest_pending_wait,
        health=evaluate(state, message_class.queue_options) if health_check else None,
        limits=limit_usage(message_class, now, limit),
    )


def live_workers(queues: list[str], alias: str, now: datetime) -> dict[str, int]:
    """How many live worker processes serve each of ``queues`` (kept in ``alias``): one query."""
    live = WorkerProcess.objects.using(alias).live(now).filter(kind=ProcessKind.WORKER)
    served = WorkerProcessQueue.objects.using(alias).filter(queue__in=queues, process__in=live)
    found = dict(served.order_by().values_list("queue").annotate(n=Count("process")))
    return {queue: found.get(queue, 0) for queue in queues}


def open_batches(queues: list[str], alias: str) -> list[Batch]:
    """The latest batches of ``queues`` not yet complete, newest first: one indexed query."""
    batches = Batch.objects.using(alias).filter(queue__in=queues, completed_at__isnull=True)
    return list(batches.order_by("-pk")[:OPEN_BATCHES])


def _per_database(message_classes: list[type[QueueMessage]], now: datetime) -> Figures:
    """The figures read once per database: the queues' totals, their live workers and the live dispatch loops."""
    by_alias: dict[str, list[str]] = {}
    for message_class in message_classes:
        by_alias.setdefault(message_class.queue_options.database, []).append(message_class.queue_name())
    return Figures(
        totals={q: t for alias, names in by_alias.items() for q, t in totals(names, using=alias).items()},
        live_workers={q: n for alias, names in by_alias.items() for q, n in live_workers(names, alias, now).items()},
        live_dispatch_loops={alias: WorkerProcess.objects.using(alias).live(now).dispatching().count()
                             for alias in by_alias},
        open_batches=[batch for alias, names in by_alias.items() for batch in open_batches(names, alias)],
    )
