"""Housekeeping on a schedule: expired leases become Abandoned, old Processed and expired messages go, batches whose
counters stayed still are recounted from their rows, and old job runs and the rows of processes long stopped or gone
go."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from .. import membership
from ..conf import settings
from ..leasing import abandon_expired, abandon_expired_leases
from ..messages import QueueMessage
from ..models import JobRun, QueueItemQuerySet
from ..processes import WorkerProcess
from ..registry import registry
from ..status import Status


def purge_processed(now: datetime | None = None) -> dict[str, int]:
    """Delete Processed messages older than their queue's ``keep_processed_for``; counts per queue."""
    now = now or timezone.now()
    return {c.queue_name(): _purge(c, now) for c in registry if _kept_for(c)}


def drop_expired(now: datetime | None = None) -> dict[str, int]:
    """Delete Pending and Sleeping messages whose ``expires_at`` has passed; counts per queue."""
    now = now or timezone.now()
    return {message_class.queue_name(): _drop(message_class, now) for message_class in registry}


def recount_batches(now: datetime | None = None) -> dict[str, int]:
    """Recount the batches whose counters stayed still (:func:`~nexus_queues.membership.recount`); per queue, how
    many messages' counting changed."""
    now = now or timezone.now()
    return {message_class.queue_name(): membership.recount(message_class, now) for message_class in registry}


def tidy(now: datetime | None = None) -> dict[str, dict[str, int]]:
    """All four chores at once: abandoned, purged, dropped and recounted counts per queue."""
    now = now or timezone.now()
    return {"abandoned": abandon_expired_leases(now), "purged": purge_processed(now), "dropped": drop_expired(now),
            "recounted": recount_batches(now)}


def tidy_queue(message_class: type[QueueMessage], now: datetime | None = None) -> dict[str, int]:
    """The four chores for one queue, so that a queue that fails holds up no other: counts per chore."""
    now = now or timezone.now()
    return {
        "abandoned": abandon_expired(message_class, now),
        "purged": _purge(message_class, now),
        "dropped": _drop(message_class, now),
        "recounted": membership.recount(message_class, now),
    }


def purge_job_runs(alias: str, now: datetime | None = None) -> int:
    """Delete the job runs on ``alias`` that started more than ``JOB_RUN_RETENTION`` ago, the oldest first, in
    batches; how many. Each batch reads the lowest ids only, so a table of old runs is never scanned whole."""
    if settings.JOB_RUN_RETENTION is None:
        return 0
    cutoff = (now or timezone.now()) - settings.JOB_RUN_RETENTION
    size, deleted = settings.WORKER_CLEANUP_BATCH_SIZE, 0
    runs = JobRun.objects.using(alias)
    while True:
        oldest = list(runs.order_by("id").values_list("id", "started_at")[:size])
        expired = [pk for pk, started_at in oldest if started_at < cutoff]
        if expired:
            deleted += runs.filter(id__in=expired).delete()[0]
        if len(expired) < size:  # a run within the retention (ids grow with time), or the table's end
            return deleted


def forget_processes(now: datetime | None = None) -> int:
    """Delete the rows of worker and dispatch processes stopped or gone longer than ``WORKER_PROCESS_RETENTION``
    ago, in every database that holds queues; how many."""
    now = now or timezone.now()
    aliases = {message_class.queue_options.database for message_class in registry} | {"default"}
    return sum(_forget(alias, now) for alias in sorted(aliases))


def _forget(alias: str, now: datetime) -> int:
    old = WorkerProcess.objects.using(alias).forgettable(now)
    ids = list(old.values_list("pk", flat=True)[: settings.WORKER_CLEANUP_BATCH_SIZE])
    return WorkerProcess.objects.using(alias).filter(pk__in=ids).delete()[1].get(WorkerProcess._meta.label, 0)


def _kept_for(message_class: type[QueueMessage]) -> timedelta | None:
    """How long the queue keeps Processed rows; None when it keeps none or keeps them forever."""
    keep = message_class.queue_options.keep_processed_for
    return keep if keep is not None and keep.total_seconds() > 0 else None


def _purge(message_class: type[QueueMessage], now: datetime) -> int:
    keep = _kept_for(message_class)
    if keep is None:
        return 0
    return _delete_in_batches(message_class.queue_items().filter(status=Status.PROCESSED, processed_at__lt=now - keep))


def _drop(message_class: type[QueueMessage], now: datetime) -> int:
    waiting = Q(status=Status.PENDING) | Q(status=Status.SLEEPING)
    # The batch members among them count Cancelled (QueueItemQuerySet.delete): they will never run.
    return _delete_in_batches(message_class.queue_items().filter(waiting, expires_at__lte=now))


def _delete_in_batches(rows: QueueItemQuerySet) -> int:
    size = settings.WORKER_CLEANUP_BATCH_SIZE
    deleted = 0
    while True:
        ids = list(rows.order_by("id").values_list("id", flat=True)[:size])
        if not ids:
            return deleted
        # The filter again: a row may have moved on.
        deleted += rows.filter(id__in=ids).delete()[0]
        if len(ids) < size:
            return deleted
