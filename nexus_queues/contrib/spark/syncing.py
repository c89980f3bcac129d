"""``sync(df, MessageClass)``: a DataFrame into a queue, with the counts of what it did."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame

from ... import signals
from ...batches import check_completion
from ...exceptions import SyncFailed
from ...messages import QueueMessage
from ...registry import registry
from .drivers import watched
from .models import Sync
from .options import write_options
from .source import register

logger = logging.getLogger("nexus_queues.spark")
_RAISED = re.compile(r"^[\w.]*(Error|Exception|Rejects|Failed|Invalid\w*|NotRegistered)\b.*?: ")


@dataclass(frozen=True)
class SyncCounts:
    """What a sync did with the DataFrame's rows."""

    new: int
    changed: int
    unchanged: int
    scheduled: int
    rejected: int
    superseded: int
    batch: int | None = None
    """The id of the :class:`~nexus_queues.models.Batch` of the messages it made Pending; None when it wrote none."""

    @classmethod
    def of(cls, record: Sync) -> SyncCounts:
        """The counts a sync's record holds."""
        return cls(
            record.new,
            record.changed,
            record.unchanged,
            record.scheduled,
            record.rejected,
            record.superseded,
            record.queue_batch_id,
        )


def sync(
    df: DataFrame, message_class: type[QueueMessage] | str, *, on_complete: QueueMessage | None = None, **options: Any
) -> SyncCounts:
    """Sync ``df`` into the queue of ``message_class``, all or nothing; the counts of what it did.

    The messages it writes (new and changed) form a batch (``SyncCounts.batch``); once all have finished,
    ``on_complete`` is enqueued, as :func:`nexus_queues.batch` does. ``options`` are the data source's
    (``rejects``, ``max_rejects``, ``batch_label``). Raises :class:`SyncFailed` when nothing was stored: too
    many rejects, a failed task, a database error.
    """
    message_class = registry.resolve(message_class)
    if on_complete is not None:
        check_completion(message_class, on_complete)
        options = {**options, **completion_options(on_complete)}
    write_options({**options, "queue": message_class.queue_name()})  # a bad option fails before the sync's record
    alias = message_class.queue_options.database
    register(df.sparkSession)
    with watched(alias, message_class.queue_name()) as record:
        writer = df.write.format("nexus").mode("append").option("queue", record.queue).option("sync", record.pk)
        for key, value in options.items():
            writer = writer.option(key, value)
        try:
            writer.save()
        except PySparkException as exc:
            record.refresh_from_db()
            cause = _python_error(exc)
            said = record.error and cause.partition(": ")[2] in record.error  # the commit's own error, recorded
            raise SyncFailed(record, record.error if said else f"{record.error} {cause}".strip()) from exc
    record.refresh_from_db()
    counts = SyncCounts.of(record)
    signals.send(signals.synced, message_class, alias, sync_id=record.pk, counts=counts)
    logger.info("Sync #%s into %s: %s.", record.pk, record.queue, counts, extra={"action": "spark_sync_stored"})
    return counts


def completion_options(on_complete: QueueMessage) -> dict[str, str]:
    """The write options that give a sync's batch the completion message ``on_complete``."""
    fields = on_complete.model_dump(mode="json", exclude={"batch"})
    return {"on_complete": type(on_complete).queue_name(), "on_complete_message": json.dumps(fields)}


def _python_error(exc: Exception) -> str:
    """The last Python exception in a Spark error's text (a task's or the commit's), else its first line."""
    lines = str(exc).strip().splitlines()
    raised = [line.strip() for line in lines if _RAISED.match(line.strip())]
    return raised[-1] if raised else (lines[0] if lines else type(exc).__name__)
