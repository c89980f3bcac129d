"""``sync(df, MessageClass)``: a DataFrame into a queue, with the counts of what it did."""

from __future__ import annotations

import json
import logging
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame

from ... import signals
from ...batches import check_completion
from ...exceptions import SyncFailed
from ...messages import QueueMessage
from ...registry import registry
from .counts import SyncCounts
from .drivers import watched
from .failures import python_error
from .jvm_syncing import sync_in_jvm
from .models import Sync
from .options import write_options
from .routes import choose
from .source import register

logger = logging.getLogger("nexus_queues.spark")


def sync(
    df: DataFrame,
    message_class: type[QueueMessage] | str,
    *,
    on_complete: QueueMessage | None = None,
    jvm: bool = True,
    **options: Any,
) -> SyncCounts:
    """Sync ``df`` into the queue of ``message_class``, all or nothing; the counts of what it did.

    The messages it writes (new and changed) form a batch (``SyncCounts.batch``); once all have finished,
    ``on_complete`` is enqueued, as :func:`nexus_queues.batch` does. ``options`` are the data source's
    (``rejects``, ``max_rejects``, ``batch_label``). Rows are staged in Spark's JVM where the session has the
    database's JDBC driver and the class compiles to column expressions, else by the ``nexus`` data source's Python
    workers (``jvm=False`` asks for those); the sync's record says which and why. Raises :class:`SyncFailed` when
    nothing was stored: too many rejects, a failed task, a database error.
    """
    message_class = registry.resolve(message_class)
    if on_complete is not None:
        check_completion(message_class, on_complete)
        options = {**options, **completion_options(on_complete)}
    write_options({**options, "queue": message_class.queue_name()})  # a bad option fails before the sync's record
    alias = message_class.queue_options.database
    route = choose(df, message_class, jvm=jvm)
    with watched(alias, message_class.queue_name(), path=route.path, path_reason=route.reason) as record:
        logger.info(
            "Sync #%s into %s takes the %s path: %s",
            record.pk,
            record.queue,
            route.path.label,
            route.reason,
            extra={"action": "spark_sync_path"},
        )
        if route.jdbc is not None:
            given = {**options, "queue": record.queue, "sync": record.pk}
            sync_in_jvm(df, message_class, route, write_options(given))
        else:
            _sync_in_python(df, record, options)
    record.refresh_from_db()
    counts = SyncCounts.of(record)
    signals.send(signals.synced, message_class, alias, sync_id=record.pk, counts=counts)
    logger.info("Sync #%s into %s: %s.", record.pk, record.queue, counts, extra={"action": "spark_sync_stored"})
    return counts


def _sync_in_python(df: DataFrame, record: Sync, options: dict[str, Any]) -> None:
    """Write ``df`` through the ``nexus`` data source as the running sync ``record``."""
    register(df.sparkSession)
    writer = df.write.format("nexus").mode("append").option("queue", record.queue).option("sync", record.pk)
    for key, value in options.items():
        writer = writer.option(key, value)
    try:
        writer.save()
    except PySparkException as exc:
        record.refresh_from_db()
        cause = python_error(exc)
        said = record.error and cause.partition(": ")[2] in record.error  # the commit's own error, recorded
        raise SyncFailed(record, record.error if said else f"{record.error} {cause}".strip()) from exc


def completion_options(on_complete: QueueMessage) -> dict[str, str]:
    """The write options that give a sync's batch the completion message ``on_complete``."""
    fields = on_complete.model_dump(mode="json", exclude={"batch"})
    return {"on_complete": type(on_complete).queue_name(), "on_complete_message": json.dumps(fields)}
