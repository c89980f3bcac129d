"""What a sync does in each of Spark's processes: stage a partition's rows (executors), then merge
them into the queue in one transaction or throw them away (driver)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeVar

import pyarrow as pa
from django.db.models import F, Max, QuerySet
from django.utils import timezone
from pydantic import ValidationError
from pyspark import TaskContext

from ... import batches, cycle_collector, signals, staging
from ...exceptions import InvalidArgument, StreamCheckpointChanged, TooManyRejects
from ...messages import QueueMessage
from ...registry import registry
from ...staging import MergeCounts
from .counts import SyncCounts
from .models import Sync
from .options import WriteOptions
from .rejects import numbered, write_rejects
from .rows import RowStager
from .writing import Staged

logger = logging.getLogger("nexus_queues.spark")
QUERY_ID = "sql.streaming.queryId"
"""The local property Spark gives a streaming query's tasks: the query's id, kept in its checkpoint."""
T = TypeVar("T")


def _queue(options: WriteOptions) -> tuple[type[QueueMessage], str]:
    message_class = registry.get(options.queue)
    return message_class, message_class.queue_options.database


def begin(options: WriteOptions) -> tuple[str, int]:
    """Create a batch write's staging table and its record (unless the options name one); drop stale ones."""
    message_class, alias = _queue(options)
    for table in staging.drop_stale(alias, timezone.now()):
        logger.warning("Dropped staging table %s, left by a sync whose driver stopped.", table)
    completion(options)  # a completion that cannot be is refused before anything is staged
    if options.sync and not Sync.objects.using(alias).filter(pk=options.sync, state=Sync.State.RUNNING).exists():
        raise InvalidArgument(f"Option sync names no running sync: #{options.sync}.")
    table = staging.new_table_name(message_class.queue_name())
    sync_id = options.sync or Sync.objects.using(alias).create(queue=message_class.queue_name()).pk
    staging.create(alias, table)
    return table, sync_id


def begin_stream(options: WriteOptions) -> str:
    """Create the stream's staging table unless a run before made it."""
    _, alias = _queue(options)
    if options.on_complete or options.batch_label:
        raise InvalidArgument("A stream's micro-batches are not batches: on_complete and batch_label are for a write.")
    table = staging.stream_table_name(options.stream_name)
    staging.create(alias, table)
    return table


def stage(options: WriteOptions, table: str, batches: Iterator[pa.RecordBatch]) -> Staged:
    """Stage a partition's rows under a new token, one transaction per Arrow batch."""
    message_class, alias = _queue(options)
    context = TaskContext.get()
    partition = context.partitionId() if context else 0
    stager = RowStager(message_class, staging.new_token(), partition, timezone.now(), staging.budget(alias))
    rows, clock = 0, _Stopwatch()
    for batch in clock.each("reading", batches):
        with cycle_collector.held():  # a batch's rows, none in a cycle
            staged = clock.timed("validating", stager.rows, batch)
            clock.timed("writing", staging.stage, alias, table, staged)
        rows += len(staged)
    logger.info(
        "Staged %s rows into %s in %.1f s (%s; %s of them validated row by row).",
        rows,
        table,
        clock.total,
        clock,
        stager.row_by_row,
        extra={"action": "spark_staged"},
    )
    query = (context.getLocalProperty(QUERY_ID) if context else None) or ""
    return Staged(stager.token, rows - stager.rejected, stager.rejected, query, partition)


class _Stopwatch:
    """Where a task's time went: seconds per step, told as "reading 0.4 s, validating 2.1 s, writing 0.3 s"."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.started = time.perf_counter()

    @property
    def total(self) -> float:
        return time.perf_counter() - self.started

    def timed(self, step: str, run: Callable[..., T], *args: Any) -> T:
        started = time.perf_counter()
        try:
            return run(*args)
        finally:
            self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - started

    def each(self, step: str, items: Iterator[T]) -> Iterator[T]:
        """``items``, the time spent waiting for each counted under ``step``."""
        while True:
            try:
                item = self.timed(step, next, items)
            except StopIteration:
                return
            yield item

    def __str__(self) -> str:
        return ", ".join(f"{step} {seconds:.1f} s" for step, seconds in self.seconds.items())


def commit(options: WriteOptions, table: str, sync_id: int, merge: Merge) -> None:
    """Merge a batch write into its queue and record it, first dropping the copies of rows a writer run twice
    staged again where the table holds more rows than ``merge`` says were written; on failure record why. Drops the
    staging table."""
    _, alias = _queue(options)
    record = Sync.objects.using(alias).get(pk=sync_id)
    try:
        copied = merge.written is not None and staging.count(alias, table) > merge.written
        if copied and (repeated := staging.drop_repeated(alias, table)):
            logger.info("Sync #%s: dropped %s rows a Spark task wrote twice.", sync_id, repeated)
        _merge(options, table, merge, record, batched=True)
    except Exception as exc:
        fail(record, alias, str(exc))
        raise
    finally:
        staging.drop(alias, table)


def abort(options: WriteOptions, table: str, sync_id: int) -> None:
    """Throw a batch write's staged rows away and record that it stored nothing."""
    _, alias = _queue(options)
    staging.drop(alias, table)
    record = Sync.objects.using(alias).get(pk=sync_id)
    if record.state == Sync.State.RUNNING:
        fail(record, alias, "Spark aborted the write (a task failed): nothing was stored.")


def commit_batch(options: WriteOptions, table: str, batch_id: int, staged: Sequence[Staged]) -> None:
    """Merge a stream's micro-batch and record its id in the same transaction, unless it was stored before."""
    message_class, alias = _queue(options)
    stream, query = options.stream_name, next((s.query for s in staged if s.query), "")
    recorded = Sync.objects.using(alias).filter(stream=stream, batch_id__isnull=False)
    try:
        if _from_another_checkpoint(recorded, batch_id, query):
            raise StreamCheckpointChanged(stream)
        # The batch id is checked again by the record's unique constraint, in the merge's transaction.
        if recorded.filter(batch_id=batch_id).update(replays=F("replays") + 1, checkpoint=query or F("checkpoint")):
            logger.info("Stream %s batch %s was stored before: replay skipped.", stream, batch_id)
            return
        record = Sync(queue=message_class.queue_name(), stream=stream, batch_id=batch_id, checkpoint=query)
        _merge(options, table, Merge.of(staged), record)
    finally:
        staging.clear(alias, table)


def _from_another_checkpoint(recorded: QuerySet[Sync], batch_id: int, query: str) -> bool:
    """Is this batch from a checkpoint other than the one whose batches ``recorded`` holds?"""
    # Spark replays only the last batch it planned: an id below the last recorded one restarts from 0.
    latest = recorded.aggregate(latest=Max("batch_id"))["latest"]
    if latest is not None and batch_id < latest:
        return True
    return bool(query) and recorded.exclude(checkpoint="").exclude(checkpoint=query).exists()


def abort_batch(options: WriteOptions, table: str) -> None:
    """Throw a stream's staged micro-batch away."""
    staging.clear(_queue(options)[1], table)


def completion(options: WriteOptions) -> QueueMessage | None:
    """The completion message the options give the sync's batch; :class:`InvalidArgument` when it cannot be one."""
    if not options.on_complete:
        if options.on_complete_message:
            raise InvalidArgument("Option on_complete_message needs on_complete, the queue of the completion message.")
        return None
    message_class, _ = _queue(options)
    completion_class = registry.resolve(options.on_complete)
    try:
        message = completion_class.model_validate(options.on_complete_message)
    except ValidationError as exc:
        raise InvalidArgument(f"Option on_complete_message is not a message of {options.on_complete!r}: {exc}") from exc
    batches.check_completion(message_class, message)
    return message


@dataclass(frozen=True)
class Merge:
    """What a merge takes: the tokens of the staged rows, how many of them are rejects, and, asked only when there
    are rejects, how many rows the partitions before each had (a reject's number in the DataFrame)."""

    tokens: list[int]
    rejected: int
    offsets: Callable[[], Mapping[int, int]]
    kept_out: MergeCounts = field(default_factory=MergeCounts)
    """Rows Spark counted and did not stage (unchanged, and the older rows of their ids): added to the merge's."""
    written: int | None = None
    """How many rows a writer that may stage some twice under one token and position wrote (Spark's JDBC writer: a
    task retried after its rows were written, or speculative); None for the ``nexus`` data source, whose tasks each
    stage under a token of their own. Copies are looked for only when the table holds more rows than this."""

    @classmethod
    def of(cls, staged: Sequence[Staged]) -> Merge:
        """The merge of what the ``nexus`` data source's tasks staged."""
        return cls([s.token for s in staged], sum(s.rejects for s in staged), lambda: _row_offsets(staged))


def _merge(options: WriteOptions, table: str, merge: Merge, record: Sync, *, batched: bool = False) -> None:
    """Check the rejects, then merge the staged messages and save ``record``, in one transaction; ``batched``:
    the messages it writes form a batch."""
    message_class, alias = _queue(options)
    tokens = merge.tokens
    record.rejected = merge.rejected
    offsets = merge.offsets() if merge.rejected else {}
    if record.rejected and options.rejects:
        write_rejects(options.rejects, numbered(staging.rejects(alias, table, tokens), offsets))
    allowed = options.rejects_allowed
    if allowed is not None and record.rejected > allowed:
        if options.rejects:
            where = f"; they are in {options.rejects}"
        else:
            where = "; the first: " + "; ".join(islice(numbered(staging.rejects(alias, table, tokens), offsets), 3))
        raise TooManyRejects(f"{record.rejected} rows were rejected, more than max_rejects ({allowed}){where}")
    started = time.perf_counter()
    with staging.turn(message_class, lambda: _waiting(record)):
        batch = None
        if batched:
            label = options.batch_label or f"Spark sync #{record.pk}"
            batch = batches.create(message_class, label=label, on_complete=completion(options))
        counts = staging.merge(message_class, table, tokens, notify=True, batch=batch)
        record.queue_batch = batch if batch is not None and batch.pk is not None else None
        kept_out = merge.kept_out
        record.new, record.changed = counts.new, counts.changed
        record.unchanged = counts.unchanged + kept_out.unchanged
        record.superseded = counts.superseded + kept_out.superseded
        record.scheduled = counts.scheduled
        record.state, record.finished_at = Sync.State.STORED, timezone.now()
        record.save(using=alias)
        if not options.sync:  # sync() sends it in its caller's process, where the receivers connected at run time are
            signals.send(signals.synced, message_class, alias, sync_id=record.pk, counts=SyncCounts.of(record))
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


def _row_offsets(staged: Sequence[Staged]) -> dict[int, int]:
    """Per partition, how many rows the partitions before it had: a row's number in the DataFrame is its index
    in its partition plus its partition's offset."""
    offsets, total = {}, 0
    for task in sorted(staged, key=lambda s: s.partition):
        offsets[task.partition], total = total, total + task.messages + task.rejects
    return offsets


def _waiting(record: Sync) -> None:
    which = f"Sync #{record.pk}" if record.pk else f"Stream {record.stream} batch {record.batch_id}"
    logger.warning(
        "%s into %s waits for another sync of the queue to finish merging.",
        which,
        record.queue,
        extra={"action": "spark_sync_waiting"},
    )


def fail(record: Sync, alias: str, error: str) -> None:
    """Record that sync ``record`` failed with ``error`` and stored nothing."""
    record.state, record.error, record.finished_at = Sync.State.FAILED, error, timezone.now()
    # Only these: the counts and batch a failed merge set on the record were rolled back with it (saving its batch
    # id, gone, failed with a foreign key error that hid the merge's own).
    record.save(using=alias, update_fields=["state", "error", "finished_at"])
    logger.warning("Sync #%s into %s failed: %s", record.pk, record.queue, error, extra={"action": "spark_sync_failed"})
