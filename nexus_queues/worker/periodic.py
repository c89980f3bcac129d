"""Periodic jobs in the worker: claim a tick by committing its unique run row, then run the job and record how it
ended; a tick another worker claimed first is skipped."""

from __future__ import annotations

import logging
import traceback
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from ..backends import backend_for
from ..conf import settings
from ..failures import message_of
from ..jobs.periodic_jobs import PeriodicJob
from ..jobs.schedules import EPOCH
from ..jobs.timetables import PeriodicTimetable
from ..models import JobRun, PeriodicJobSettings
from .clocks import ahead_of_database
from .logs import correlation_id
from .runs import worker_name

logger = logging.getLogger("nexus_queues.worker")

Submit = Callable[[Callable[[], None]], object]
"""Runs a callable now or on a pool thread."""


class PeriodicRunner:
    """Offers each due tick and run request of ``job_classes`` to the database, and runs the ones it wins."""

    def __init__(self, job_classes: Sequence[type[PeriodicJob]]) -> None:
        self.job_classes = list(job_classes)
        self._timetables: dict[str, PeriodicTimetable] = {}
        self._settings: dict[str, PeriodicJobSettings] = {}
        self._reported: set[tuple[str, datetime]] = set()

    def read_settings(self, now: datetime) -> None:
        """Read each job's switch and run request; on the first read, create missing rows and start the timetables
        after the last tick any worker handled (or, for a job that does not catch up, at ``now``). A run request
        still standing is honoured, even one made while no worker ran."""
        for alias, group in _by_database(self.job_classes).items():
            names = [job.name() for job in group]
            if not self._timetables.keys() >= set(names):
                _start(self, alias, group, now)
            for found in PeriodicJobSettings.objects.using(alias).filter(job__in=names):
                self._settings[found.job] = found
                if self._believable(alias, found, now):
                    self._timetables[found.job].tick_handled(found.ticks_since)

    def _believable(self, alias: str, found: PeriodicJobSettings, now: datetime) -> bool:
        """Is ``ticks_since`` no later than the database's clock allows? A future tick, stored by a worker whose
        clock ran ahead before claims were judged by the database's clock, is ignored (and logged once) until the
        next claim replaces it. The database is asked only when the tick is ahead of this host's clock."""
        ahead = ahead_of_database(found.ticks_since, alias, now)
        if ahead is None:
            return True
        if (found.job, found.ticks_since) not in self._reported:
            self._reported.add((found.job, found.ticks_since))
            _report_future_tick(alias, found, ahead)
        return False

    def timetables(self) -> list[PeriodicTimetable]:
        """The timetables started so far (by :meth:`read_settings`)."""
        return list(self._timetables.values())

    def step(self, now: datetime, submit: Submit) -> None:
        """Claim what is due of each job and hand each claimed run to ``submit``."""
        for job in self.job_classes:
            timetable, found = self._timetables[job.name()], self._settings.get(job.name())
            enabled = found is None or found.enabled  # an operator may have deleted the row: on, as at first
            tick = timetable.due_tick(now)
            if tick is not None:
                self._offer(job, tick, enabled, now, submit)
                timetable.tick_handled(tick)
            request = timetable.due_request(found.run_requested_at if found else None)
            if request is not None:
                self._offer(job, request, enabled, now, submit, request=True)
                timetable.request_handled(request)

    def _offer(
        self, job: type[PeriodicJob], tick: datetime, enabled: bool, now: datetime, submit: Submit, *,
        request: bool = False,
    ) -> None:
        if not enabled:
            logger.info("Periodic job %s is switched off: tick %s skipped.", job.name(), tick.isoformat(),
                        extra={"action": "periodic_skipped"})
            return
        run = claim(job, tick, now, request=request)
        if run is not None:
            submit(lambda: run_claimed(job, run))


def _start(runner: PeriodicRunner, alias: str, group: Iterable[type[PeriodicJob]], now: datetime) -> None:
    """Create the missing settings rows and start a timetable per job; the settings read that follows moves each
    timetable on to the ticks already handled (a job that does not catch up starts at ``now`` all the same).

    A new row's ticks count from ``now``, or from the database's clock when this host's runs ahead of it."""
    since = min(now, backend_for(alias).database_now())
    PeriodicJobSettings.objects.using(alias).bulk_create(
        [PeriodicJobSettings(job=job.name(), ticks_since=since) for job in group], ignore_conflicts=True
    )
    for job in group:
        runner._timetables[job.name()] = PeriodicTimetable(job.get_schedule(), EPOCH if job.catch_up else now)


def _by_database(job_classes: Iterable[type[PeriodicJob]]) -> dict[str, list[type[PeriodicJob]]]:
    groups: dict[str, list[type[PeriodicJob]]] = {}
    for job in job_classes:
        groups.setdefault(job.database, []).append(job)
    return groups


def claim(job: type[PeriodicJob], tick: datetime, now: datetime, *, request: bool = False) -> JobRun | None:
    """Commit the run row of ``job`` at ``tick``; None when another worker committed it first, or when ``tick`` is
    later than the database's clock plus ``CLOCK_TOLERANCE`` (this host's clock runs ahead: logged).

    The same transaction records the tick as handled in the job's settings (``ticks_since``), so that the runs are
    only history, which retention may delete; a stored tick the database's clock shows to be in the future is
    replaced. With ``request``, ``tick`` is a run request's time, and the request is answered (cleared) instead.
    """
    row = PeriodicJobSettings.objects.using(job.database).filter(job=job.name())
    if not request:
        database_now = backend_for(job.database).database_now()
        latest_allowed = database_now + settings.CLOCK_TOLERANCE
        if tick > latest_allowed:
            _refuse_future_tick(job, tick, database_now)
            return None
        row = row.filter(Q(ticks_since__lt=tick) | Q(ticks_since__gt=latest_allowed))
    run = JobRun(job=job.name(), correlation_id=uuid.uuid4().hex, worker=worker_name(), started_at=now, tick=tick)
    try:
        with transaction.atomic(using=job.database):
            run.save(using=job.database, force_insert=True)
            if request:
                row.filter(run_requested_at=tick).update(run_requested_at=None)
            else:
                row.update(ticks_since=tick)
    except IntegrityError:
        return None
    return run


def _refuse_future_tick(job: type[PeriodicJob], tick: datetime, database_now: datetime) -> None:
    worker = worker_name()
    logger.error(
        "Worker %s refused to claim tick %s of %s: its clock runs %s ahead of the database's (more than "
        "CLOCK_TOLERANCE, %s). Set this host's clock right (NTP); until then it runs no periodic job.",
        worker, tick.isoformat(), job.name(), tick - database_now, settings.CLOCK_TOLERANCE,
        extra={"action": "periodic_clock_ahead", "worker": worker},
    )


def _report_future_tick(alias: str, found: PeriodicJobSettings, ahead: timedelta) -> None:
    runs = JobRun.objects.using(alias).filter(job=found.job, tick=found.ticks_since)
    writer = runs.values_list("worker", flat=True).first() or "a worker (its run is gone)"
    logger.warning(
        "%s's ticks are marked handled up to %s, %s ahead of the database's clock: stored by %s, whose clock ran "
        "ahead. Ignored: the job's ticks go on from the database's time.",
        found.job, found.ticks_since.isoformat(), ahead, writer,
        extra={"action": "periodic_future_tick", "worker": writer},
    )


def run_claimed(job: type[PeriodicJob], run: JobRun) -> None:
    """Run the job under the run's correlation id and record its end: succeeded, or failed with the traceback."""
    token = correlation_id.set(run.correlation_id)
    try:
        logger.info("%s started (tick %s).", job.name(), run.tick.isoformat() if run.tick else "-",
                    extra={"action": "periodic_started"})
        try:
            job().run()
        except Exception as exc:
            run.errors, run.error = 1, "".join(traceback.format_exception(exc))
            logger.warning("%s failed: %s", job.name(), message_of(exc), exc_info=exc,
                           extra={"action": "periodic_failed"})
        else:
            run.processed = 1
        run.finished_at = timezone.now()
        run.save(using=job.database, update_fields=["processed", "errors", "error", "finished_at"])
        logger.info("%s finished in %.3f s.", job.name(), (run.finished_at - run.started_at).total_seconds(),
                    extra={"action": "periodic_finished"})
    finally:
        correlation_id.reset(token)
