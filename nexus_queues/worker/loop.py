"""The worker loop: sweeps over the jobs (peek, then runs over leased batches), sleeping between sweeps."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence, Set
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import datetime, timedelta
from functools import partial
from typing import NamedTuple

from django.db import reset_queries
from django.db.models import Max, Q
from django.utils import timezone

from .. import throughput
from ..conf import settings
from ..connections import DATABASE_ERRORS, reset_connections
from ..exceptions import DatabaseUnavailable
from ..failures import message_of
from ..jobs.periodic_jobs import PeriodicJob, periodic_jobs
from ..jobs.queue_jobs import QueueJob, jobs
from ..jobs.schedules import EPOCH
from ..jobs.timetables import QueueTimetable
from ..limited_claims import forget_old_starts, until_rates_open
from ..messages import QueueMessage
from ..models import QueueSettings
from ..processes import ProcessKind
from ..registry import registry
from .breaker import CircuitBreaker, CircuitBreakers
from .clocks import ahead_of_database
from .dispatch import Dispatcher
from .housekeeping import forget_processes, purge_job_runs, tidy_queue
from .lease_renewal import LeaseRenewal
from .logs import what_runs
from .periodic import PeriodicRunner
from .presence import Presence
from .readiness import apps_by_database, wait_until_migrated
from .runs import run_chained, run_once_in_thread
from .time_limits import TimeLimits
from .wakeups import Wakeups

logger = logging.getLogger("nexus_queues.worker")

PEEK_DELAY_RANGE = (timedelta(milliseconds=100), timedelta(seconds=10))


class Drained(NamedTuple):
    """What a sweep's drain of one queue did."""

    leased: int
    more: bool
    """May the queue hold more messages than it leased: sweep again at once?"""


NOTHING = Drained(0, more=False)


def check_peek_delay(delay: timedelta) -> None:
    """Warn when the peek delay is outside the recommended 100 ms to 10 s."""
    low, high = PEEK_DELAY_RANGE
    if delay < low:
        logger.warning("Peek delay %s is under 100 ms: idle workers will load the database.", delay)
    elif delay > high:
        logger.warning("Peek delay %s is over 10 s: messages may back up while workers sleep.", delay)


class Worker:
    """Runs queue jobs until stopped (or, in burst mode, until nothing is Pending), and the periodic jobs' ticks.

    A queue job with a schedule drains its queue only from a tick (or a start request) until it runs dry.
    """

    def __init__(
        self,
        *,
        job_classes: Sequence[type[QueueJob]] | None = None,
        periodic_job_classes: Sequence[type[PeriodicJob]] | None = None,
        concurrency: int | None = None,
        burst: bool = False,
        peek_delay: timedelta | None = None,
        max_peek: int | None = None,
        listen: bool | None = None,
        dispatcher: Dispatcher | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.job_classes = list(jobs if job_classes is None else job_classes)
        self.periodic = PeriodicRunner(list(periodic_jobs if periodic_job_classes is None else periodic_job_classes))
        self.concurrency = concurrency or settings.WORKER_CONCURRENCY
        self.burst = burst
        self.peek_delay = peek_delay if peek_delay is not None else settings.WORKER_PEEK_DELAY
        self.max_peek = max_peek or settings.WORKER_MAX_PEEK
        self.dispatcher = dispatcher
        self.clock = clock
        """Monotonic seconds, for the peek delay, the housekeeping interval and the breakers' backoff."""
        aliases = [j.message_class.queue_options.database for j in self.job_classes] or ["default"]
        listen = settings.WORKER_LISTEN if listen is None else listen
        self.wakeups = Wakeups(aliases, listen=listen and not burst)
        self.breaker = CircuitBreaker(
            "The worker's database", settings.WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER, settings.WORKER_MAX_BACKOFF,
            clock=clock,
        )
        self.queue_breakers = CircuitBreakers(
            "Queue {}", settings.WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER, settings.WORKER_MAX_BACKOFF, clock=clock
        )
        """Per queue, watching its job's leases and acknowledgements."""
        self.lease_renewal = LeaseRenewal()
        self.time_limits = TimeLimits(settings.WORKER_TIME_LIMIT_GRACE)
        self.stopping = False
        self._activity = "starting"
        self.presence = Presence(
            kind=ProcessKind.WORKER, queues=[j.message_class.queue_name() for j in self.job_classes],
            dispatches=dispatcher is not None, concurrency=self.concurrency, burst=burst,
            activity=lambda: "stopping" if self.stopping else self._activity, runs=self.lease_renewal.in_hand,
        )
        self._next_tidy = -math.inf
        self._woken: Set[str] = frozenset()
        self._enabled: tuple[float, list[type[QueueJob]]] = (-math.inf, [])  # read on the first sweep
        self._start_requests: dict[str, datetime] = {}
        self._timetables: dict[str, QueueTimetable] = {}
        check_peek_delay(self.peek_delay)

    def stop(self) -> None:
        """Stop leasing; the messages in hand are finished first."""
        self.stopping = True
        self.wakeups.nudge()

    def run(self) -> None:
        """Loop until :meth:`stop` (or, with ``burst``, until the queues are drained)."""
        runs = what_runs([j.message_class.queue_name() for j in self.job_classes],
                         [j.name() for j in self.periodic.job_classes], dispatch=self.dispatcher is not None,
                         concurrency=self.concurrency, burst=self.burst)
        logger.info("Worker started: %s.", runs, extra={"action": "started"})
        self.wakeups.connect()  # before the first peek, so no NOTIFY falls between the two
        pool = None
        try:
            if self.burst:  # a long-lived worker rides missing tables out: a deploy may migrate after starting it
                tables = apps_by_database([j.message_class for j in self.job_classes],
                                          [j.database for j in self.periodic.job_classes])
                wait_until_migrated(tables, self.breaker, self.wakeups.wait, lambda: self.stopping)
            self.lease_renewal.start()
            self.time_limits.start()
            self.presence.start()
            pool = self._pool()
            woken: set[str] = set()
            while not self.stopping:
                self._activity = "working"
                pause = self.sweep(pool, woken)
                if pause is None:
                    break
                self._activity = "sleeping"
                woken = self.wakeups.wait(pause) if pause > 0 else set()
        finally:
            if pool is not None:
                _shut_down(pool, self.concurrency)
            self.lease_renewal.stop()
            self.time_limits.stop()
            self.presence.stop()
            self.wakeups.close()
            reset_connections()
        logger.info("Worker stopped.", extra={"action": "stopped"})

    def _pool(self) -> ThreadPoolExecutor | None:
        """Threads for ``concurrency`` runs at once; None runs them in this thread."""
        if self.concurrency > 1:
            return ThreadPoolExecutor(self.concurrency, thread_name_prefix="nexus-job")
        return None

    def sweep(self, pool: ThreadPoolExecutor | None = None, woken: Set[str] = frozenset()) -> float | None:
        """One sweep over the jobs; the seconds to sleep (0: go on at once), or None when a burst is done.
        ``woken``: the queues a wake-up named since the last sweep.

        Each queue's work is its own: a queue that fails is logged by name and backs off, the others go on.
        """
        started = self.clock()
        self._woken = woken
        reset_queries()  # with DEBUG on, Django would keep every query of a long-running process
        self._housekeeping()
        pause = self.dispatcher.step() if self.dispatcher is not None else math.inf
        now = timezone.now()
        try:
            enabled = self._enabled_jobs(now)
            self.periodic.step(now, lambda run: _submit(pool, run))
            self.breaker.success()
        except DATABASE_ERRORS as exc:
            reset_connections()
            return self._failed(self.breaker, exc)
        more = False
        for job in enabled:
            if self._due(job, now):
                more |= self._drain_scheduled(job, pool)
        if more:
            return 0
        backing_off = [b.waiting() for b in map(self._breaker, enabled) if b.failures]
        rates = until_rates_open([job.message_class for job in enabled], timezone.now())  # not the peek delay
        if self.burst and not backing_off and not rates:  # a burst waits for a rate, not for other workers
            return None
        # The dispatch loop's pause counts from before the jobs ran, so that a due message is not late.
        until_tick = (self._next_tick() - timezone.now()).total_seconds()
        waits = (pause - (self.clock() - started), self.peek_delay.total_seconds(), until_tick, *backing_off, *rates)
        return max(0.0, min(waits))

    def _due(self, job: type[QueueJob], now: datetime) -> bool:
        """Should the worker lease for ``job`` now? Always for a job without a schedule."""
        timetable = self._timetables.get(job.message_class.queue_name())
        return timetable is None or timetable.due(now, self._start_requests.get(job.message_class.queue_name()))

    def _drain_scheduled(self, job: type[QueueJob], pool: ThreadPoolExecutor | None) -> bool:
        """:meth:`_drain_queue`; a scheduled job's drain ends when it leases nothing. True to sweep again at once."""
        drained = self._drain_queue(job, pool)
        timetable = self._timetables.get(job.message_class.queue_name())
        if timetable is not None and not drained.leased and not self._breaker(job).failures:  # a failing one goes on
            timetable.ran_dry()
        return drained.more

    def _next_tick(self) -> datetime:
        """The next tick still to come (a switched-off queue's passed tick waits for it to be switched on)."""
        now = timezone.now()
        ticks = [t.next_tick for t in self._timetables.values()] + [t.next_tick for t in self.periodic.timetables()]
        return min((tick for tick in ticks if tick > now), default=now + self.peek_delay)

    def _housekeeping(self) -> None:
        """Each queue's chores and each database's old job runs and throughput minutes, every
        ``WORKER_HOUSEKEEPING_INTERVAL``; a chore that fails waits for the next time."""
        now = self.clock()
        if now < self._next_tidy:
            return
        self._next_tidy = now + settings.WORKER_HOUSEKEEPING_INTERVAL.total_seconds()
        for message_class in registry:
            _chore(f"queue {message_class.queue_name()}", partial(_tidy, message_class))
        databases = {c.queue_options.database for c in registry} | {job.database for job in periodic_jobs}
        for alias in sorted(databases):
            _chore(f"the job runs on {alias}", partial(_purge_runs, alias))
            _chore(f"the throughput minutes on {alias}", partial(throughput.fold, alias))
            _chore(f"the rate limits' old starts on {alias}", partial(forget_old_starts, alias))
        _chore("the old worker processes", forget_processes)

    def _enabled_jobs(self, now: datetime) -> list[type[QueueJob]]:
        """The jobs whose processing is on, read again (with the start requests and the periodic jobs' settings) at
        most once per peek delay, or at once when a scheduled queue is woken (its start request is read then)."""
        read_at, enabled = self._enabled
        if self.clock() - read_at < self.peek_delay.total_seconds() and not self._woken & self._timetables.keys():
            return enabled
        names = {j.message_class.queue_name() for j in self.job_classes}
        off: set[str] = set()
        self._start_requests = {}  # a request an operator's switch-off cleared is gone
        for alias in {j.message_class.queue_options.database for j in self.job_classes}:
            rows = QueueSettings.objects.using(alias).filter(
                Q(processing_enabled=False) | Q(start_requested_at__isnull=False), queue__in=names
            ).values_list("queue", "processing_enabled", "start_requested_at")
            for queue, processing, requested_at in rows:
                if not processing:
                    off.add(queue)
                if requested_at is not None:
                    self._start_requests[queue] = requested_at
        self._start_timetables(now)
        self.periodic.read_settings(now)
        enabled = [j for j in self.job_classes if j.message_class.queue_name() not in off]
        self._enabled = (self.clock(), enabled)
        return enabled

    def _start_timetables(self, now: datetime) -> None:
        """A timetable per scheduled job, counting from the queue's last run: a worker that was down across a tick,
        or a start request, drains once when it comes back (as does the first worker of a queue never run). A last
        run that started ahead of the database's clock (a host's clock ran ahead) counts as none."""
        for job in self.job_classes:
            queue = job.message_class.queue_name()
            schedule = job.get_schedule() if queue not in self._timetables else None
            if schedule is not None:
                last_run = job.message_class.job_runs().aggregate(last=Max("started_at"))["last"]
                if last_run is not None and _ahead(last_run, job, now):
                    last_run = None
                self._timetables[queue] = QueueTimetable(schedule, last_run or EPOCH)

    def _drain_queue(self, job: type[QueueJob], pool: ThreadPoolExecutor | None) -> Drained:
        """:meth:`_drain` unless the queue is backing off after a failure."""
        breaker = self._breaker(job)
        if breaker.waiting() > 0:
            return NOTHING
        try:
            drained = self._drain(job, pool)
        except Exception as exc:  # the queue's own, e.g. its table cannot be read: the other queues go on
            reset_connections()
            self._failed(breaker, exc)
            return NOTHING
        breaker.success()
        return drained

    def _failed(self, breaker: CircuitBreaker, exc: Exception) -> float:
        """Record the failure; the pause before the next try. A burst worker gives up instead once that try would
        come after ``WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER`` of failures (:class:`DatabaseUnavailable`)."""
        pause = breaker.failure(exc)
        if self.burst:
            try:
                breaker.give_up_if_late()
            except DatabaseUnavailable as gave_up:
                raise gave_up from exc
        return pause

    def _breaker(self, job: type[QueueJob]) -> CircuitBreaker:
        return self.queue_breakers[job.message_class.queue_name()]

    def _peek(self, job: type[QueueJob]) -> int:
        return job.message_class.queue_items().pending()[: self.max_peek].count()

    def _drain(self, job: type[QueueJob], pool: ThreadPoolExecutor | None) -> Drained:
        """Runs for the peeked messages, at most ``concurrency`` at once.

        A queue just named by a wake-up is leased at once: its peek would only cost a round trip. When that run
        leases less than a batch the queue is dry, and a message stored since wakes the worker again: no peek
        follows (without a wake-up, one does at once, for the messages stored meanwhile).
        """
        woken = job.message_class.queue_name() in self._woken
        runs = 1 if woken else math.ceil(self._peek(job) / job.batch_size)
        if pool is None:
            leased, dry = 0, False
            acknowledgement = None  # each run's, written with the next run's claim
            try:
                for _ in range(runs):
                    if self.stopping:
                        break
                    got, acknowledgement = run_chained(job, self.lease_renewal, self.time_limits, acknowledgement)
                    leased += got
                    if dry := got < job.batch_size:
                        break
            finally:
                if acknowledgement is not None:
                    acknowledgement.write()  # the last run's, which no claim follows
        else:
            leased, dry = self._drain_concurrently(job, pool, runs)
        return Drained(leased, more=leased > 0 and not (woken and dry))

    def _drain_concurrently(self, job: type[QueueJob], pool: ThreadPoolExecutor, runs: int) -> tuple[int, bool]:
        """Leased, and whether a run leased less than a batch."""
        running: set[Future[int]] = set()
        leased = 0
        starved = False
        try:
            while (runs and not self.stopping and not starved) or running:
                while runs and not self.stopping and not starved and len(running) < self.concurrency:
                    running.add(pool.submit(run_once_in_thread, job, self.lease_renewal, self.time_limits))
                    runs -= 1
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    got = future.result()
                    leased += got
                    starved |= got < job.batch_size
        finally:
            wait(running)  # never leave a run unacknowledged behind a failure
        return leased, starved


def _ahead(last_run: datetime, job: type[QueueJob], now: datetime) -> bool:
    ahead = ahead_of_database(last_run, job.message_class.queue_options.database, now)
    if ahead is not None:
        logger.warning(
            "Queue %s's last run started %s ahead of the database's clock, on a host whose clock ran ahead: ignored, "
            "the queue is drained once now, as one never run.", job.message_class.queue_name(), ahead,
            extra={"action": "schedule_future_run"},
        )
    return ahead is not None


def _submit(pool: ThreadPoolExecutor | None, work: Callable[[], None]) -> None:
    """Run ``work`` on the pool (so a long periodic job does not hold up the queues), or here without one."""
    if pool is None:
        _logged(work)
    else:
        pool.submit(_logged, work)


def _logged(work: Callable[[], None]) -> None:
    try:
        work()
    except Exception as exc:  # e.g. the database went away before the run's end was recorded
        reset_connections()
        logger.error("A periodic run's end was not recorded: %s", message_of(exc), exc_info=exc,
                     extra={"action": "periodic_unrecorded"})


def _shut_down(pool: ThreadPoolExecutor, threads: int) -> None:
    """Close each pool thread's connections, then end the threads; a thread's connections are its own to close."""
    # The barrier holds each thread to one call, so every thread gets one.
    barrier = threading.Barrier(threads, timeout=10)

    def close() -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass
        reset_connections()

    wait([pool.submit(close) for _ in range(threads)])
    pool.shutdown(wait=True)


def _chore(what: str, work: Callable[[], object]) -> None:
    """``work()``; a failure is logged naming ``what``, and the next housekeeping tries again."""
    try:
        work()
    except Exception as exc:
        reset_connections()
        logger.warning(
            "Housekeeping of %s failed (%s: %s); next try in %s.", what, type(exc).__name__, message_of(exc),
            settings.WORKER_HOUSEKEEPING_INTERVAL, extra={"action": "housekeeping_failed"},
        )


def _tidy(message_class: type[QueueMessage]) -> None:
    queue = message_class.queue_name()
    for chore, count in tidy_queue(message_class).items():
        if count:
            logger.info("%s %s message(s) of %s.", chore.capitalize(), count, queue, extra={"action": chore})


def _purge_runs(alias: str) -> None:
    count = purge_job_runs(alias)
    if count:
        logger.info("Purged %s job run(s) older than %s on %s.", count, settings.JOB_RUN_RETENTION, alias,
                    extra={"action": "purged_job_runs"})
