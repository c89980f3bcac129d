"""Helpers for testing your own jobs: run a queue's job in this process until nothing is Pending, and capture what
the code under test enqueues. Both go through the real enqueue, lease and acknowledgement, on the test's database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.test import TestCase

from . import signals
from .conf import settings
from .enqueueing import EnqueueResult
from .exceptions import DrainDidNotEnd, InvalidArgument
from .jobs import QueueJob, jobs
from .messages import QueueMessage
from .models import JobRun, QueueItem
from .registry import registry
from .worker.lease_renewal import LeaseRenewal
from .worker.runs import run_batch
from .worker.time_limits import TimeLimits

__all__ = ["Captured", "Drained", "capture_enqueued", "drain"]


@dataclass(frozen=True)
class Drained:
    """What :func:`drain` came to: its job runs' counts added up, and the messages set to Error."""

    runs: int = 0
    """Job runs that leased something."""
    leased: int = 0
    processed: int = 0
    rescheduled: int = 0
    """Messages set Sleeping: for a retry after a failure, or at the time the job returned."""
    errors: int = 0
    failed: tuple[QueueItem, ...] = ()
    """The rows set to Error, with ``error_type``, ``error_message`` and ``error_traceback``."""


def drain(queue: type[QueueMessage] | str | type[QueueJob], *, max_runs: int = 100) -> Drained:
    """Run a queue's job in this process, lease by lease as the worker does, until a lease finds nothing Pending.

    ``queue`` is a message class or queue name (its registered job runs) or a job class, abstract ones too.
    Sleeping messages stay asleep, and the job's schedule and a switched-off queue are not looked at; its
    ``time_limit`` is enforced as the worker does. Raises
    :class:`~nexus_queues.exceptions.DrainDidNotEnd` when messages are still Pending after ``max_runs`` runs.
    """
    if not isinstance(max_runs, int) or isinstance(max_runs, bool) or max_runs < 1:
        raise InvalidArgument(f"max_runs must be a positive integer, got {max_runs!r}.")
    job = _job(queue)
    renewal = LeaseRenewal()  # never started: a test's run ends long before its lease needs renewing
    limits = TimeLimits(settings.WORKER_TIME_LIMIT_GRACE) if job.time_limit is not None else None
    if limits is not None:
        limits.start()
    try:
        return _drain(job, renewal, limits, max_runs)
    finally:
        if limits is not None:
            limits.stop()


def _drain(job: type[QueueJob], renewal: LeaseRenewal, limits: TimeLimits | None, max_runs: int) -> Drained:
    runs: list[JobRun] = []
    while True:
        _, run = run_batch(job, renewal, limits)
        if run is None:
            return _drained(job, runs)
        runs.append(run)
        if len(runs) >= max_runs and job.message_class.queue_items().pending().exists():
            raise DrainDidNotEnd(job.message_class.queue_name(), max_runs)


def _job(queue: type[QueueMessage] | str | type[QueueJob]) -> type[QueueJob]:
    if isinstance(queue, type) and issubclass(queue, QueueJob):
        return queue
    return jobs.get(registry.resolve(queue).queue_name())


def _drained(job: type[QueueJob], runs: list[JobRun]) -> Drained:
    cids = [run.correlation_id for run in runs]
    failed = job.message_class.queue_items().errors().filter(correlation_id__in=cids) if cids else []
    return Drained(
        runs=len(runs),
        leased=sum(run.leased for run in runs),
        processed=sum(run.processed for run in runs),
        rescheduled=sum(run.rescheduled for run in runs),
        errors=sum(run.errors for run in runs),
        failed=tuple(failed),
    )


@dataclass
class Captured:
    """The ``enqueue`` and ``enqueue_many`` calls into one queue during a :func:`capture_enqueued` block."""

    results: list[EnqueueResult] = field(default_factory=list)
    """Each call's result, in order."""

    @property
    def messages(self) -> list[QueueMessage]:
        """The messages stored, in order: idempotent duplicates and superseded versions left out."""
        return [message for result in self.results for message in result.stored]

    @property
    def discarded(self) -> list[QueueMessage]:
        """The idempotent duplicates, which were not stored again."""
        return [message for result in self.results for message in result.discarded]


@contextmanager
def capture_enqueued(message_class: type[QueueMessage]) -> Iterator[Captured]:
    """Capture what the block enqueues into ``message_class``'s queue, once it commits.

    Inside a test's transaction (``TestCase``, pytest-django's ``db``), which never commits, the on-commit callbacks
    the block registers run at its end, as with ``TestCase.captureOnCommitCallbacks(execute=True)``; those of a
    rolled-back savepoint are dropped with its messages. Use it at the test's top level, not inside an ``atomic``.
    """
    captured = Captured()

    def receiver(sender: type[QueueMessage], result: EnqueueResult, **kwargs: Any) -> None:
        captured.results.append(result)

    signals.enqueued.connect(receiver, sender=message_class, weak=False)
    try:
        with TestCase.captureOnCommitCallbacks(using=message_class.queue_options.database, execute=True):
            yield captured
    finally:
        signals.enqueued.disconnect(receiver, sender=message_class)
