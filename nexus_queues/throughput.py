"""How much each queue's job gets through: finished runs counted per queue and minute, for charts and metrics.

Job runs can be many, so nothing that is read often (the dashboard, a metrics scrape) adds them up. Instead the
worker adds each finished run to its queue's row for the minute, in the transaction that acknowledges the run.
Minutes are kept for :data:`MINUTES_KEPT`; housekeeping then folds them into the queue's all-time row, so the
totals never decrease and a queue never has more than a day of rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Sum
from django.utils import timezone

from .backends import backend_for
from .conf import settings
from .models.throughput import QueueMinute as QueueMinute  # importable from here, where it was

if TYPE_CHECKING:
    from .models import JobRun

MINUTES_KEPT = timedelta(days=1)
"""How long a queue's minutes stay apart (the longest chart); older ones are folded into its all-time row."""

ALL_TIME = datetime(1970, 1, 1, tzinfo=UTC)
"""The ``minute`` of a queue's all-time row (the Unix epoch), which holds the sums of its folded minutes."""

COUNTS = ("processed", "errors", "runs", "run_seconds")


@dataclass(frozen=True)
class Throughput:
    """Counts of finished runs of a queue's job."""

    processed: int = 0
    errors: int = 0
    runs: int = 0
    run_seconds: float = 0.0
    """The runs' summed time from lease to finish."""

    def __add__(self, other: Throughput) -> Throughput:
        return Throughput(*(getattr(self, c) + getattr(other, c) for c in COUNTS))


def minute_of(at: datetime) -> datetime:
    """The start of the minute ``at`` falls in, in UTC."""
    return at.astimezone(UTC).replace(second=0, microsecond=0)


def record(queue: str, finished_at: datetime, counts: Throughput, *, using: str) -> None:
    """Add a finished run's ``counts`` to its queue's minute (call it in the run's acknowledging transaction)."""
    backend_for(using).add_counts(QueueMinute, {"queue": queue, "minute": minute_of(finished_at)}, _values(counts))


def finish(run: JobRun, fields: Sequence[str], counts: Throughput, *, using: str) -> None:
    """Save ``fields`` of a finished ``run`` and add its ``counts`` to its queue's minute (in its acknowledging
    transaction), in one round trip where the engine can."""
    assert run.finished_at is not None
    key = {"queue": run.queue, "minute": minute_of(run.finished_at)}
    backend_for(using).finish_run(run, fields, QueueMinute, key, _values(counts))


def per_minute(queue: str, since: datetime, *, using: str) -> dict[datetime, Throughput]:
    """The queue's counts per minute since ``since`` (at most :data:`MINUTES_KEPT` back), keyed by each minute's
    start (UTC); minutes without finished runs are absent."""
    rows = QueueMinute.objects.using(using).filter(queue=queue, minute__gte=minute_of(since)).order_by("minute")
    return {minute: _throughput(*counts) for minute, *counts in rows.values_list("minute", *COUNTS)}


def totals(queues: Iterable[str], *, using: str) -> dict[str, Throughput]:
    """Every queue's all-time counts, which never decrease; a queue with no finished run is absent."""
    rows = QueueMinute.objects.using(using).filter(queue__in=list(queues)).order_by().values("queue")
    sums = rows.annotate(**{c: Sum(c) for c in COUNTS}).values_list("queue", *COUNTS)
    return {queue: _throughput(*counts) for queue, *counts in sums}


def fold(using: str, now: datetime | None = None) -> int:
    """Fold the minutes older than :data:`MINUTES_KEPT` on ``using`` into their queues' all-time rows, in batches;
    how many minutes were folded. Each batch is one transaction, so the totals are never seen short."""
    backend = backend_for(using)
    cutoff = minute_of((now or timezone.now()) - MINUTES_KEPT)
    old = QueueMinute.objects.using(using).filter(minute__gt=ALL_TIME, minute__lt=cutoff)
    folded = 0
    while True:
        with backend.write_transaction():
            batch = list(old.select_for_update().order_by("id")[: settings.WORKER_CLEANUP_BATCH_SIZE])
            sums: dict[str, Throughput] = {}
            for row in batch:
                sums[row.queue] = sums.get(row.queue, Throughput()) + _throughput(*(getattr(row, c) for c in COUNTS))
            for queue, counts in sums.items():
                backend.add_counts(QueueMinute, {"queue": queue, "minute": ALL_TIME}, _values(counts))
            QueueMinute.objects.using(using).filter(id__in=[row.id for row in batch]).delete()
        folded += len(batch)
        if len(batch) < settings.WORKER_CLEANUP_BATCH_SIZE:
            return folded


def _throughput(processed: Any, errors: Any, runs: Any, run_seconds: Any) -> Throughput:
    """From the database's numbers (sums may come as decimals)."""
    return Throughput(int(processed), int(errors), int(runs), float(run_seconds))


def _values(counts: Throughput) -> dict[str, float]:
    return {c: getattr(counts, c) for c in COUNTS}
