"""Progress of a sync, told while it runs: the tasks of Spark's running stages, and the rows staged so far."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import DatabaseError, connections
from pyspark import SparkContext

from ... import staging


@dataclass(frozen=True)
class Progress:
    """Tasks done and in all of the running stages, and rows in the sync's staging table."""

    done: int
    tasks: int
    staged: int


def tasks_done(context: SparkContext) -> tuple[int, int] | None:
    """Tasks done and in all of the active stages; None when no stage runs."""
    tracker = context.statusTracker()
    stages = [info for stage in tracker.getActiveStageIds() if (info := tracker.getStageInfo(stage)) is not None]
    if not stages:
        return None
    return sum(s.numCompletedTasks for s in stages), sum(s.numTasks for s in stages)


def rows_staged(alias: str, queue: str, since: datetime) -> int:
    """Rows in the staging tables of syncs into ``queue`` begun at ``since`` or later (normally one: this sync's)."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        tables = [t for t in connection.introspection.table_names(cursor) if staging.made_for(t, queue, since)]
        total = 0
        for table in tables:
            try:
                cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            except DatabaseError:  # dropped by its commit meanwhile
                continue
            total += cursor.fetchone()[0]
    return total


@contextmanager
def reporting(
    context: SparkContext, report: Callable[[Progress], None], staged: Callable[[], int], every: float = 2.0
) -> Iterator[None]:
    """Call ``report`` whenever the running tasks or the rows ``staged`` change, while the body runs."""
    stop = threading.Event()

    def watch() -> None:
        last = None
        try:
            while not stop.wait(every):
                tasks = tasks_done(context)
                if tasks is None:
                    continue
                now = Progress(*tasks, staged())
                if now != last:
                    report(now)
                    last = now
        finally:
            connections.close_all()  # this thread's own

    watcher = threading.Thread(target=watch, name="nexus-spark-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
