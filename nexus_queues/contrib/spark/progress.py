"""Progress of a Spark job, told while it runs: the tasks of the running stages, done and in all."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark import SparkContext


def tasks_done(context: SparkContext) -> tuple[int, int] | None:
    """Tasks done and in all of the active stages; None when no stage runs."""
    tracker = context.statusTracker()
    stages = [info for stage in tracker.getActiveStageIds() if (info := tracker.getStageInfo(stage)) is not None]
    if not stages:
        return None
    return sum(s.numCompletedTasks for s in stages), sum(s.numTasks for s in stages)


@contextmanager
def reporting(context: SparkContext, report: Callable[[int, int], None], every: float = 2.0) -> Iterator[None]:
    """Call ``report(done, total)`` whenever the running stages' tasks change, while the body runs."""
    stop = threading.Event()

    def watch() -> None:
        last = None
        while not stop.wait(every):
            now = tasks_done(context)
            if now is not None and now != last:
                report(*now)
                last = now

    watcher = threading.Thread(target=watch, name="nexus-spark-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
