"""One run of a job: lease a batch under a new correlation id, process it, acknowledge it in one transaction."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from django.db import reset_queries, transaction
from django.utils import timezone

from .. import throughput
from ..backends.hydration import new
from ..cancelling import cancelled_among
from ..conf import settings
from ..connections import DATABASE_ERRORS, reset_connections
from ..exceptions import MessageCancelled, TimeLimitExceeded, UnstorableValue
from ..failures import message_of
from ..jobs.queue_jobs import Outcome, QueueJob, in_hand
from ..leasing import finish_and_lease, finish_and_lease_again, lease, lease_again
from ..limited_claims import wake_on_release
from ..limits import check_datetime
from ..models import JobRun, QueueItem
from ..retries import atomic_retried, outlasting
from ..throughput import Throughput
from ..updates import (
    Finishing,
    acknowledged,
    finishing,
    mark_error,
    mark_processed,
    reschedule,
    retry_later,
    write_finishing,
    write_finishing_again,
)
from .lease_renewal import LeaseRenewal
from .logs import correlation_id
from .time_limits import TimeLimits

logger = logging.getLogger("nexus_queues.worker")


@dataclass
class _Classified:
    """A run's messages by what their outcome asks for."""

    done: list[QueueItem] = field(default_factory=list)
    later: dict[datetime, list[QueueItem]] = field(default_factory=lambda: defaultdict(list))
    retries: list[tuple[QueueItem, BaseException, datetime]] = field(default_factory=list)
    failed: list[tuple[QueueItem, BaseException]] = field(default_factory=list)
    settled: int = 0
    """Messages past their time limit that the watchdog set to Error (or a retry) itself."""


@dataclass
class _Processed:
    """What the job made of a run's items, and which of them the time-limit watchdog settled itself."""

    outcomes: Mapping[int, Outcome]
    settled: set[int] = field(default_factory=set)


def run_once(job: type[QueueJob], renewal: LeaseRenewal, limits: TimeLimits | None = None) -> int:
    """One run of ``job`` over one leased batch; return how many messages it leased (0 when none were Pending)."""
    return run_batch(job, renewal, limits)[0]


def run_once_in_thread(job: type[QueueJob], renewal: LeaseRenewal, limits: TimeLimits | None = None) -> int:
    """:func:`run_once` in a pool thread: its query log reset first, its connections after a database error."""
    reset_queries()
    try:
        return run_once(job, renewal, limits)
    except DATABASE_ERRORS:
        reset_connections()
        raise


def run_batch(
    job: type[QueueJob], renewal: LeaseRenewal, limits: TimeLimits | None = None
) -> tuple[int, JobRun | None]:
    """One run of ``job`` over one leased batch: how many messages it leased, and its recorded run (None when
    nothing was Pending). ``limits`` enforces the job's ``time_limit`` (without it, none is)."""
    leased, run, _ = _run(job, renewal, limits, None, chain=False)
    return leased, run


def run_chained(
    job: type[QueueJob], renewal: LeaseRenewal, limits: TimeLimits | None, previous: Acknowledgement | None
) -> tuple[int, Acknowledgement | None]:
    """:func:`run_once` whose claim also writes ``previous`` (the last run's acknowledgement, of the same job), and
    whose own acknowledgement, when it is one statement, is returned to go with the next claim rather than written:
    a worker draining a queue then spends one statement and one commit per run instead of two. The caller writes
    the one it is left with (:meth:`Acknowledgement.write`)."""
    leased, _, acknowledgement = _run(job, renewal, limits, previous, chain=True)
    return leased, acknowledgement


@dataclass
class Acknowledgement:
    """A run's acknowledgement made ready as one statement (:func:`~nexus_queues.updates.finishing`), kept to be
    written with its queue's next claim."""

    job: QueueJob
    ready: Finishing

    def write(self) -> None:
        """Write it on its own (no claim follows), unless a claim wrote it already."""
        if not self.ready.reported:
            _write(self.ready)
            self.finished()

    def finished(self) -> None:
        """What follows the acknowledgement's commit, under the run's correlation id."""
        run = self.ready.finish.run
        token = correlation_id.set(run.correlation_id)
        try:
            _acknowledged(self.job, run)
        finally:
            correlation_id.reset(token)


def _run(
    job: type[QueueJob], renewal: LeaseRenewal, limits: TimeLimits | None, previous: Acknowledgement | None,
    *, chain: bool,
) -> tuple[int, JobRun | None, Acknowledgement | None]:
    cid = uuid.uuid4().hex
    token = correlation_id.set(cid)
    try:
        items, run = _lease(job, cid, previous)
        if not items:
            return 0, None, None
        logger.debug("Leased %s message(s) of %s.", len(items), run.queue, extra={"action": "leased"})
        instance = job()
        renewal.hold(cid, items, job.lease_time)
        try:
            processed = _process(instance, items, limits)
        finally:
            renewal.release(cid)
        outcome = _classify(instance, items, processed)
        return len(items), run, _acknowledge(instance, run, outcome, until=_lease_end(items), chain=chain)
    finally:
        correlation_id.reset(token)


def worker_name() -> str:
    """``host:pid`` of this process, as runs record it (read per run: a forked worker has its own pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def _lease(job: type[QueueJob], cid: str, previous: Acknowledgement | None) -> tuple[list[QueueItem], JobRun]:
    """The run's claim (``previous`` written by it), which a lost connection does not lose while a lease lasts: the
    new one's, or the previous run's."""
    options = job.message_class.queue_options
    now = timezone.now()
    run = new(JobRun, job=job.name(), queue=options.queue, correlation_id=cid, worker=worker_name(), started_at=now)
    until = now + job.lease_time if previous is None else _lease_end(previous.ready.items)
    claim = partial(_claim, job, run, now, previous)
    items = outlasting(options.database, until, partial(claim, again=False), partial(claim, again=True),
                       f"the claim of run {cid}")
    if previous is not None:
        previous.finished()
    return items, run


def _claim(
    job: type[QueueJob], run: JobRun, now: datetime, previous: Acknowledgement | None, *, again: bool
) -> list[QueueItem]:
    """:func:`lease` for ``run`` (:func:`finish_and_lease` with ``previous``), or ``again`` after a lost connection."""
    queue, count, cid, lease_time = job.message_class, job.batch_size, run.correlation_id, job.lease_time
    if previous is None:
        claim = lease_again if again else lease
        return claim(queue, count, lease_time=lease_time, correlation_id=cid, now=now, run=run)
    write = finish_and_lease_again if again else finish_and_lease
    return write(previous.ready, queue, count, lease_time=lease_time, correlation_id=cid, now=now, run=run)


def _process(job: QueueJob, items: Sequence[QueueItem], limits: TimeLimits | None) -> _Processed:
    if job.time_limit is None or limits is None:
        return _Processed(_batch(job, items))
    if type(job).process_batch is QueueJob.process_batch:  # one limit per message, as process() sees them
        return _limited_each(job, items, limits, job.time_limit)
    return _limited_batch(job, items, limits, job.time_limit * len(items))


def _limited_each(job: QueueJob, items: Sequence[QueueItem], limits: TimeLimits, limit: timedelta) -> _Processed:
    outcomes: dict[int, Outcome] = {}
    settled: set[int] = set()
    for item in items:
        reason = f"Processing message {item.pk} ran past {job.name()}.time_limit ({limit}) and was stopped."
        limited = limits.call(partial(job.run_one, item), limit, partial(_settle, job, [item], reason))
        outcomes[item.pk] = _named(limited.result, reason) if limited.fired else limited.result
        if limited.fired:
            reset_connections()
        if limited.settled:
            settled.add(item.pk)
    return _Processed(outcomes, settled)


def _limited_batch(job: QueueJob, items: Sequence[QueueItem], limits: TimeLimits, limit: timedelta) -> _Processed:
    reason = (f"Processing a batch of {len(items)} ran past {len(items)} x {job.name()}.time_limit ({limit}) "
              "and was stopped.")
    limited = limits.call(partial(_batch, job, items), limit, partial(_settle, job, items, reason))
    result = limited.result
    outcomes = dict.fromkeys([item.pk for item in items], result) if isinstance(result, BaseException) else result
    if limited.fired:
        outcomes = {pk: _named(outcome, reason) for pk, outcome in outcomes.items()}
        reset_connections()
    return _Processed(outcomes, {item.pk for item in items} if limited.settled else set())


def _named(outcome: Outcome, reason: str) -> Outcome:
    """The watchdog's :class:`TimeLimitExceeded` given its reason (raised as a class, it has only its docstring).

    Its callers then close the thread's connections: the exception may have landed in a driver's Python code
    (PyMySQL's, psycopg's) halfway through a query, and the acknowledgement needs a connection in step."""
    if isinstance(outcome, TimeLimitExceeded):
        outcome.args = (reason,)
    return outcome


def _batch(job: QueueJob, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
    try:
        with in_hand(items):
            return job.process_batch(items) or {}
    except Exception as exc:
        return {item.pk: exc for item in items}


def _settle(job: QueueJob, items: Sequence[QueueItem], reason: str) -> None:
    """Error, or a retry, for ``items`` whose processing did not stop within the grace after its time limit."""
    grace = settings.WORKER_TIME_LIMIT_GRACE
    exc = TimeLimitExceeded(f"{reason} It did not stop within {grace} (blocked where it cannot be interrupted), "
                            "so the worker settled the message; the job's code may still be running.")
    now = timezone.now()
    for item in items:
        retry = _retry_at(job, item, now)
        _log_failure(item, exc, retry, traceback=False)
        if retry is None:
            mark_error([item], exc, now=now)
        else:
            retry_later([item], exc, retry, now=now)


def _classify(job: QueueJob, items: Sequence[QueueItem], processed: _Processed) -> _Classified:
    now = timezone.now()
    result = _Classified(settled=len(processed.settled))
    outcomes = processed.outcomes
    cancelled = _cancelled(items, outcomes)
    for item in items:
        outcome = outcomes.get(item.pk)
        if item.pk in processed.settled:
            continue
        if item.pk in cancelled:
            logger.info("Message %s was cancelled; its job stopped.", item.pk, extra={"action": "message_cancelled"})
        elif outcome is None:
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


def _cancelled(items: Sequence[QueueItem], outcomes: Mapping[int, Outcome]) -> set[int]:
    """The items whose job stopped on :class:`MessageCancelled` and whose rows are Cancelled (one query, made only
    when a job stopped so: a batch job that stops for one cancelled message fails the others as usual)."""
    stopped = [item for item in items if isinstance(outcomes.get(item.pk), MessageCancelled)]
    return cancelled_among(stopped) if stopped else set()


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


def _acknowledge(
    job: QueueJob, run: JobRun, outcome: _Classified, *, until: datetime, chain: bool = False
) -> Acknowledgement | None:
    """Write the run's outcome, trying again after a lost connection until ``until`` (its lease's end); with ``chain``,
    an acknowledgement of one statement is returned instead, to be written with the next claim."""
    alias = job.message_class.queue_options.database
    now = timezone.now()
    unreadable = run.errors  # a claim that met rows Python cannot read counted them as errors already

    fields = job.saved_fields  # the job's own results, saved with each outcome by the same fenced write

    def record() -> None:
        job.acknowledge()  # first: the job's own writes are still fenced by the lease
        run.processed = len(mark_processed(outcome.done, now=now, fields=fields)) if outcome.done else 0
        later = [
            len(reschedule(batch, at, now=now, reset_attempts=True, fields=fields))
            for at, batch in outcome.later.items()
        ]
        retries = [len(retry_later([item], exc, at, now=now, fields=fields)) for item, exc, at in outcome.retries]
        run.rescheduled = sum(later) + sum(retries)
        failed = sum(len(mark_error([item], exc, now=now, fields=fields)) for item, exc in outcome.failed)
        run.errors = unreadable + outcome.settled + failed
        run.finished_at = now
        counts = Throughput(run.processed, run.errors, runs=1, run_seconds=(now - run.started_at).total_seconds())
        throughput.finish(run, ["processed", "rescheduled", "errors", "finished_at"], counts, using=alias)

    # One transaction, run again whole if the database makes it a deadlock's victim: every change in it
    # is fenced by the lease, so the acknowledgement is never the victim left behind. A plain run whose messages
    # were all processed is one statement where the engine can: its own transaction, with a round trip instead of four.
    # Not a run with nothing processed (its messages cancelled) or one whose stuck messages the watchdog settled.
    others = outcome.later or outcome.retries or outcome.failed or unreadable or outcome.settled
    plain = bool(outcome.done) and not others and _acknowledges_nothing(job)
    ready = finishing(outcome.done, run, now=now, fields=fields) if plain else None
    if ready is not None and chain:
        return Acknowledgement(job, ready)
    if ready is not None:
        _write(ready)
    else:
        first = partial(atomic_retried, alias, record)
        again = partial(_unless_acknowledged, run, alias, first)
        outlasting(alias, until, first, again, f"the acknowledgement of run {run.correlation_id}")
    _acknowledged(job, run)
    return None


def _write(ready: Finishing) -> None:
    """:func:`write_finishing`, trying again after a lost connection while the run's leases last."""
    outlasting(ready.finish.model.message_class.queue_options.database, _lease_end(ready.items),
               partial(write_finishing, ready), partial(write_finishing_again, ready),
               f"the acknowledgement of run {ready.finish.run.correlation_id}")


def _unless_acknowledged(run: JobRun, alias: str, acknowledge: Callable[[], None]) -> None:
    """``acknowledge()`` after a lost connection, unless the lost attempt had committed."""
    if not acknowledged(run, alias):
        acknowledge()


def _lease_end(items: Sequence[QueueItem]) -> datetime:
    """When the first of the leases of ``items`` ends (now, when none is held: a settled item's was given up)."""
    return min((item.lease_expires_at for item in items if item.lease_expires_at is not None), default=timezone.now())


def _acknowledged(job: QueueJob, run: JobRun) -> None:
    """After a run's acknowledgement: the job's hook once it commits, a wake-up for a place freed, the log line."""
    transaction.on_commit(job.acknowledged, using=job.message_class.queue_options.database)
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
