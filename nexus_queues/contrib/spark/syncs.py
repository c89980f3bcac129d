"""What a sync does in each of Spark's processes: stage a partition's rows (executors), then merge
them into the queue in one transaction or throw them away (driver)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from itertools import islice

import pyarrow as pa
from django.db.models import F
from django.utils import timezone
from pyspark import TaskContext

from ... import staging
from ...exceptions import NexusQueuesError
from ...messages import QueueMessage
from ...registry import registry
from .models import Sync
from .options import WriteOptions
from .rejects import write_rejects
from .rows import RowStager
from .writing import Staged

logger = logging.getLogger("nexus_queues.spark")


class TooManyRejects(NexusQueuesError):
    """More rows were rejected than the sync's ``max_rejects`` allows: nothing was stored."""


def _queue(options: WriteOptions) -> tuple[type[QueueMessage], str]:
    message_class = registry.get(options.queue)
    return message_class, message_class.queue_options.database


def begin(options: WriteOptions) -> tuple[str, int]:
    """Create a batch write's staging table and its record (unless the options name one); drop stale ones."""
    message_class, alias = _queue(options)
    for table in staging.drop_stale(alias, timezone.now()):
        logger.warning("Dropped staging table %s, left by a sync whose driver stopped.", table)
    table = staging.new_table_name(message_class.queue_name())
    sync_id = options.sync or Sync.objects.using(alias).create(queue=message_class.queue_name()).pk
    staging.create(alias, table)
    return table, sync_id


def begin_stream(options: WriteOptions) -> str:
    """Create the stream's staging table unless a run before made it."""
    _, alias = _queue(options)
    table = staging.stream_table_name(options.stream_name)
    staging.create(alias, table)
    return table


def stage(options: WriteOptions, table: str, batches: Iterator[pa.RecordBatch]) -> Staged:
    """Stage a partition's rows under a new token, one transaction per Arrow batch."""
    message_class, alias = _queue(options)
    context = TaskContext.get()
    stager = RowStager(message_class, staging.new_token(), context.partitionId() if context else 0, timezone.now())
    rows, started = 0, time.perf_counter()
    for batch in batches:
        staged = stager.rows(batch)
        staging.stage(alias, table, staged)
        rows += len(staged)
    seconds = time.perf_counter() - started
    logger.info("Staged %s rows into %s in %.1f s.", rows, table, seconds, extra={"action": "spark_staged"})
    return Staged(stager.token, rows - stager.rejected, stager.rejected)


def commit(options: WriteOptions, table: str, sync_id: int, staged: Sequence[Staged]) -> None:
    """Merge a batch write into its queue and record it; on failure record why. Drops the staging table."""
    _, alias = _queue(options)
    record = Sync.objects.using(alias).get(pk=sync_id)
    try:
        _merge(options, table, staged, record)
    except Exception as exc:
        _fail(record, alias, str(exc))
        raise
    finally:
        staging.drop(alias, table)


def abort(options: WriteOptions, table: str, sync_id: int) -> None:
    """Throw a batch write's staged rows away and record that it stored nothing."""
    _, alias = _queue(options)
    staging.drop(alias, table)
    record = Sync.objects.using(alias).get(pk=sync_id)
    if record.state == Sync.State.RUNNING:
        _fail(record, alias, "Spark aborted the write (a task failed): nothing was stored.")


def commit_batch(options: WriteOptions, table: str, batch_id: int, staged: Sequence[Staged]) -> None:
    """Merge a stream's micro-batch and record its id in the same transaction, unless it was stored before."""
    message_class, alias = _queue(options)
    stream = options.stream_name
    try:  # the batch id is checked again by the record's unique constraint, in the merge's transaction
        if Sync.objects.using(alias).filter(stream=stream, batch_id=batch_id).update(replays=F("replays") + 1):
            logger.info("Stream %s batch %s was stored before: replay skipped.", stream, batch_id)
            return
        _merge(options, table, staged, Sync(queue=message_class.queue_name(), stream=stream, batch_id=batch_id))
    finally:
        staging.clear(alias, table)


def abort_batch(options: WriteOptions, table: str) -> None:
    """Throw a stream's staged micro-batch away."""
    staging.clear(_queue(options)[1], table)


def _merge(options: WriteOptions, table: str, staged: Sequence[Staged], record: Sync) -> None:
    """Check the rejects, then merge the staged messages and save ``record``, in one transaction."""
    message_class, alias = _queue(options)
    tokens = [s.token for s in staged]
    record.rejected = sum(s.rejects for s in staged)
    if record.rejected and options.rejects:
        write_rejects(options.rejects, staging.rejects(alias, table, tokens))
    allowed = options.rejects_allowed
    if allowed is not None and record.rejected > allowed:
        if options.rejects:
            where = f"; they are in {options.rejects}"
        else:
            where = "; the first: " + "; ".join(islice(staging.rejects(alias, table, tokens), 3))
        raise TooManyRejects(f"{record.rejected} rows were rejected, more than max_rejects ({allowed}){where}")
    started = time.perf_counter()
    with staging.turn(message_class, lambda: _waiting(record)):
        counts = staging.merge(message_class, table, tokens, notify=True)
        record.new, record.changed, record.unchanged = counts.new, counts.changed, counts.unchanged
        record.scheduled, record.superseded = counts.scheduled, counts.superseded
        record.state, record.finished_at = Sync.State.STORED, timezone.now()
        record.save(using=alias)
    logger.info(
        "Sync #%s into %s: %s new, %s changed, %s unchanged, %s scheduled, %s rejected; merged in %.1f s.",
        record.pk,
        record.queue,
        record.new,
        record.changed,
        record.unchanged,
        record.scheduled,
        record.rejected,
        time.perf_counter() - started,
        extra={"action": "spark_sync_stored"},
    )


def _waiting(record: Sync) -> None:
    which = f"Sync #{record.pk}" if record.pk else f"Stream {record.stream} batch {record.batch_id}"
    logger.warning(
        "%s into %s waits for another sync of the queue to finish merging.",
        which,
        record.queue,
        extra={"action": "spark_sync_waiting"},
    )


def _fail(record: Sync, alias: str, error: str) -> None:
    record.state, record.error, record.finished_at = Sync.State.FAILED, error, timezone.now()
    record.save(using=alias)
    logger.warning("Sync #%s into %s failed: %s", record.pk, record.queue, error, extra={"action": "spark_sync_failed"})
