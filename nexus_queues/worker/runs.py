"""One run of a job: lease a batch under a new correlation id, process it, acknowledge it in one transaction."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import reset_queries
from django.utils import timezone

from .. import throughput
from ..connections import DATABASE_ERRORS, reset_connections
from ..exceptions import UnstorableValue
from ..failures import message_of
from ..jobs.queue_jobs import Outcome, QueueJob
from ..leasing import lease
from ..limited_claims import wake_on_release
from ..limits import check_datetime
from ..models import JobRun, QueueItem
from ..retries import atomic_retried
from ..throughput import Throughput
from ..updates import finish_processed, mark_error, mark_processed, reschedule, retry_later
from .lease_renewal import LeaseRenewal
from .logs import correlation_id

logger = logging.getLogger("nexus_queues.worker")


@dataclass
class _Classified:
    """A run's messages by what their outcome asks for."""

    done: list[QueueItem] = field(default_factory=list)
    later: dict[datetime, list[QueueItem]] = field(default_factory=lambda: defaultdict(list))
    retries: list[tuple[QueueItem, BaseException, datetime]] = field(default_factory=list)
    failed: list[tuple[QueueItem, BaseException]] = field(default_factory=list)


def run_once(job: type[QueueJob], renewal: LeaseRenewal) -> int:
    """One run of ``job`` over one leased batch; return how many messages it leased (0 when none were Pending)."""
    return run_batch(job, renewal)[0]


def run_once_in_thread(job: type[QueueJob], renewal: LeaseRenewal) -> int:
    """:func:`run_once` in a pool thread: its query log reset first, its connections after a database error."""
    reset_queries()
    try:
        return run_once(job, renewal)
    except DATABASE_ERRORS:
        reset_connections()
        raise


def run_batch(job: type[QueueJob], renewal: LeaseRenewal) -> tuple[int, JobRun | None]:
    """One run of ``job`` over one leased batch: how many messages it leased, and its recorded run (None when
    nothing was Pending)."""
    cid = uuid.uuid4().hex
    token = correlation_id.set(cid)
    try:
        items, run = _lease(job, cid)
        if not items:
            return 0, None
        logger.debug("Leased %s message(s) of %s.", len(items), run.queue, extra={"action": "leased"})
        instance = job()
        renewal.hold(cid, items, job.lease_time)
        try:
            outcomes = _process(instance, items)
        finally:
            renewal.release(cid)
        _acknowledge(instance, run, _classify(instance, items, outcomes))
        return len(items), run
    finally:
        correlation_id.reset(token)


def worker_name() -> str:
    """``host:pid`` of this process, as runs record it (read per run: a forked worker has its own pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def _lease(job: type[QueueJob], cid: str) -> tuple[list[QueueItem], JobRun]:
    options = job.message_class.queue_options
    now = timezone.now()
    run = JobRun(job=job.name(), queue=options.queue, correlation_id=cid, worker=worker_name(), started_at=now)
    items = lease(job.message_class, job.batch_size, lease_time=job.lease_time, correlation_id=cid, now=now, run=run)
    return items, run


def _process(job: QueueJob, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
    try:
        return job.process_batch(items) or {}
    except Exception as exc:
        return {item.pk: exc for item in items}


def _classify(job: QueueJob, items: Sequence[QueueItem], outcomes: Mapping[int, Outcome]) -> _Classified:
    now = timezone.now()
    result = _Classified()
    for item in items:
        outcome = outcomes.get(item.pk)
        if outcome is None:
            result.done.append(item)
        elif isinstance(outcome, datetime):
            _later(result, item, outcome)
        elif isinstance(outcome, BaseException):
            retry = _retry_at(job, item, now)
            _log_failure(item, outcome, retry, traceback=job.logs_failure_tracebacks)
            if retry is None:
                result.failed.append((item, outcome))
            else:
                result.retries.append((item, outcome, retry))
        else:
            result.failed.append((item, TypeError(f"{type(outcome).__name__} is not a datetime, exception or None.")))
    return result


def _later(result: _Classified, item: QueueItem, at: datetime) -> None:
    """Run ``item`` again at ``at``; a time the database cannot store fails this message only."""
    try:
        check_datetime("the time the job returned", at)
    except UnstorableValue as exc:
        _log_failure(item, exc, None)
        result.failed.append((item, exc))
    else:
        result.later[at].append(item)


def _retry_at(job: QueueJob, item: QueueItem, now: datetime) -> datetime | None:
    """The job's time for another attempt, or None (Error) when there is none or it cannot be stored."""
    try:
        retry = job.retry_at(item, now)
        if retry is not None:
            check_datetime("retry_at", retry)
    except (OverflowError, UnstorableValue) as exc:
        logger.warning("Message %s is not retried: %s", item.pk, exc, extra={"action": "retry_unusable"})
        return None
    return retry


def _acknowledge(job: QueueJob, run: JobRun, outcome: _Classified) -> None:
    alias = job.message_class.queue_options.database
    now = timezone.now()
    unreadable = run.errors  # a claim that met rows Python cannot read counted them as errors already

    def record() -> None:
        job.acknowledge()  # first: the job's own writes are still fenced by the lease
        run.processed = len(mark_processed(outcome.done, now=now)) if outcome.done else 0
        later = [len(reschedule(batch, at, now=now, reset_attempts=True)) for at, batch in outcome.later.items()]
        retries = [len(retry_later([item], exc, at, now=now)) for item, exc, at in outcome.retries]
        run.rescheduled = sum(later) + sum(retries)
        run.errors = unreadable + sum(len(mark_error([item], exc, now=now)) for item, exc in outcome.failed)
        run.finished_at = now
        counts = Throughput(run.processed, run.errors, runs=1, run_seconds=(now - run.started_at).total_seconds())
        throughput.finish(run, ["processed", "rescheduled", "errors", "finished_at"], counts, using=alias)

    # One transaction, run again whole if the database makes it a deadlock's victim: every change in it
    # is fenced by the lease, so the acknowledgement is never the victim left behind. A plain run whose messages
    # were all processed is one statement where the engine can: its own transaction, with a round trip instead of four.
    plain = not (outcome.later or outcome.retries or outcome.failed or unreadable) and _acknowledges_nothing(job)
    if not (plain and finish_processed(outcome.done, run, now=now)):
        atomic_retried(alias, record)
    wake_on_release(job.message_class)
    logger.info(
        "%s: %s leased, %s processed, %s rescheduled, %s errors.", run.queue, run.leased, run.processed,
        run.rescheduled, run.errors, extra={"action": "run_finished"},
    )


def _acknowledges_nothing(job: QueueJob) -> bool:
    """Does ``job`` leave :meth:`QueueJob.acknowledge` as it is (writing nothing of its own)?"""
    return type(job).acknowledge is QueueJob.acknowledge


def _log_failure(item: QueueItem, exc: BaseException, retry: datetime | None, *, traceback: bool = True) -> None:
    then = f"retrying at {retry.isoformat()}" if retry else "set to Error"
    logger.warning(
        "Message %s (attempt %s) failed: %s; %s.", item.pk, item.attempts, message_of(exc), then,
        exc_info=exc if traceback else None, extra={"action": "message_failed"},
    )
