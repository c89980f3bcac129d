"""A sync on the JVM path: the staging table and record made on the driver as for the ``nexus`` data source, the
rows staged by Spark (:mod:`.jvm_staging`), then the same merge, all or nothing."""

from __future__ import annotations

import logging
import time

from django.db import DatabaseError
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame

from ... import staging
from ...exceptions import SyncFailed
from ...messages import QueueMessage
from ...staging import MergeCounts
from . import merging
from .codegen import jit_sized_methods
from .failures import python_error, task_failed
from .jvm_staging import partition_rows, stage_in_jvm
from .models import Sync
from .options import WriteOptions
from .routes import Route

logger = logging.getLogger("nexus_queues.spark")


def sync_in_jvm(df: DataFrame, message_class: type[QueueMessage], route: Route, options: WriteOptions) -> None:
    """Stage ``df`` with Spark's JDBC writer and merge it into the queue of ``message_class`` as the running sync
    ``options.sync``; :class:`SyncFailed` when nothing was stored."""
    assert route.jdbc is not None
    alias = message_class.queue_options.database
    table, sync_id = merging.begin(options)
    record = Sync.objects.using(alias).get(pk=sync_id)
    token, started = staging.new_token(), time.perf_counter()
    queue = message_class.queue_options
    skip_unchanged = message_class.has_identity and queue.idempotent  # a queue that is not stores them again
    try:
        with jit_sized_methods(df.sparkSession):
            staged = stage_in_jvm(df, message_class, route.jdbc, table, token, skip_unchanged=skip_unchanged)
    except (PySparkException, Py4JJavaError, DatabaseError) as exc:
        staging.drop(alias, table)
        which = "a task failed" if task_failed(exc) else "the write failed"
        reason = f"Spark's JDBC write of the staged rows stopped ({which}): {python_error(exc)}"
        merging.fail(record, alias, reason)
        raise SyncFailed(record, reason) from exc
    logger.info(
        "Staged %s rows into %s in Spark's JVM in %.1f s (%s rejected; %s unchanged and %s older rows of their ids "
        "left in Spark).",
        staged.rows,
        table,
        time.perf_counter() - started,
        staged.rejected,
        staged.unchanged,
        staged.superseded,
        extra={"action": "spark_staged"},
    )
    kept_out = MergeCounts(unchanged=staged.unchanged, superseded=staged.superseded)
    merge = merging.Merge([token], staged.rejected, lambda: partition_rows(df), kept_out, written=staged.written)
    try:
        merging.commit(options, table, sync_id, merge)
    except Exception as exc:
        record.refresh_from_db()
        raise SyncFailed(record, record.error) from exc

