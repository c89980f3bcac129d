"""Scheduled work against wrong clocks: a host whose clock runs ahead of (or behind) the database's, and the nights a
time zone's clocks change.

A host's clock is faked the way the worker's steps take it: the ``now`` handed to
:class:`~nexus_queues.worker.periodic.PeriodicRunner` (and to its settings read). The database keeps its real clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import connection

from nexus_queues import Status, enqueue
from nexus_queues.backends import backend_for
from nexus_queues.jobs.periodic_jobs import PeriodicJob
from nexus_queues.jobs.schedules import Every
from nexus_queues.jobs.timetables import QueueTimetable
from nexus_queues.models import JobRun, PeriodicJobSettings
from nexus_queues.worker.loop import Worker
from nexus_queues.worker.periodic import PeriodicRunner
from nexus_queues.worker.runs import worker_name
from tests.testapp.jobs import DigestJob
from tests.testapp.queues import Digest

pytestmark = pytest.mark.django_db

FIVE = timedelta(minutes=5)
HOUR = timedelta(hours=1)
YEAR = timedelta(days=365)
STEP = timedelta(seconds=10)
"""How often the simulated workers step: a claim retried in a loop would show as one claim per step."""


def job_on(schedule: str | timedelta, zone: str | None = None) -> type[PeriodicJob]:
    """A periodic job that does nothing, on ``schedule``, kept out of the registry."""
    attrs = {"__module__": __name__, "schedule": schedule, "time_zone": zone, "run": lambda self: None}
    return type("Clocked", (PeriodicJob,), attrs, abstract=True)  # type: ignore[call-arg]


def inline(work: Callable[[], None]) -> None:
    work()


def worker_at(now: datetime, job: type[PeriodicJob]) -> PeriodicRunner:
    runner = PeriodicRunner([job])
    runner.read_settings(now)
    return runner


def ticks(job: type[PeriodicJob]) -> list[datetime]:
    return list(JobRun.objects.filter(job=job.name()).order_by("tick").values_list("tick", flat=True))


class Claims:
    """Counts the claims made on a connection (each inserts its run row), those that fail included."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        self.count += sql.startswith("INSERT") and "nexus_job_run" in sql
        return execute(sql, params, many, context)


def clock_records(caplog: pytest.LogCaptureFixture, action: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "action", None) == action]


# --- a host whose clock runs ahead -------------------------------------------------------------------------------


@pytest.mark.parametrize("ahead", [HOUR, YEAR], ids=["an hour", "a year"])
def test_periodic_clock__a_host_ahead_claims_no_future_tick_and_stalls_nobody(caplog, ahead: timedelta):
    """A worker whose clock runs ahead claims none of a job's ticks (asking once per tick) and logs its worker id
    (host:pid) and how far ahead it is; a worker with the right time, started after it, runs the current tick and
    stores it as the last handled."""
    job, database_now = job_on(FIVE), backend_for("default").database_now()
    worker_at(database_now - HOUR, job)  # the job is known from an hour ago
    fast_now = Every(FIVE).latest(database_now + ahead) + STEP  # its three steps fall between the same two ticks
    fast = worker_at(fast_now, job)
    claims = Claims()
    with connection.execute_wrapper(claims):
        for step in range(3):
            fast.step(fast_now + FIVE + step * STEP, inline)
    assert ticks(job) == [] and claims.count == 0
    [refused] = clock_records(caplog, "periodic_clock_ahead")
    assert worker_name() in refused.getMessage() and refused.levelname == "ERROR"
    worker_at(database_now, job).step(database_now, inline)
    assert ticks(job) == [Every(FIVE).latest(database_now)]
    assert PeriodicJobSettings.objects.get(job=job.name()).ticks_since == Every(FIVE).latest(database_now)


def test_periodic_clock__a_host_ahead_that_sees_a_job_first_counts_its_ticks_from_the_databases_clock():
    """The first worker to see a job records when its ticks start: from the database's clock, not a clock ahead."""
    job = job_on(FIVE)
    worker_at(backend_for("default").database_now() + YEAR, job)
    assert PeriodicJobSettings.objects.get(job=job.name()).ticks_since <= backend_for("default").database_now()


@pytest.mark.parametrize("ahead", [HOUR, YEAR], ids=["an hour", "a year"])
def test_periodic_clock__a_future_tick_stored_by_a_host_now_gone_heals_itself(caplog, ahead: timedelta):
    """A tick stored as handled by a worker whose clock ran ahead (as before ticks were judged by the database's
    clock) stalls nobody once that worker is gone: the next worker runs the current tick and logs the worker that
    stored the future one; the job's ticks go on from there, each run once.

    The workers step through the twenty minutes before the database's now, so that their ticks are due at once."""
    job, database_now = job_on(FIVE), backend_for("default").database_now()
    future = Every(FIVE).latest(database_now + ahead)
    PeriodicJobSettings.objects.create(job=job.name(), ticks_since=future)
    JobRun.objects.create(job=job.name(), correlation_id="ahead", worker="fast-host:4242", tick=future,
                          started_at=future, finished_at=future, processed=1)
    start = database_now - 4 * FIVE
    worker = worker_at(start, job)
    worker.step(start, inline)
    current = Every(FIVE).latest(start)
    assert ticks(job) == [current, future]
    assert PeriodicJobSettings.objects.get(job=job.name()).ticks_since == current
    [healed] = clock_records(caplog, "periodic_future_tick")
    assert "fast-host:4242" in healed.getMessage()
    restarted = worker_at(start + STEP, job)
    for runner in (worker, restarted):
        runner.step(start + FIVE, inline)
        runner.read_settings(start + FIVE + STEP)
    assert ticks(job) == [current, current + FIVE, future]


def test_periodic_clock__a_host_a_little_ahead_within_the_tolerance_claims_as_usual(settings):
    """A clock ahead by less than ``CLOCK_TOLERANCE`` claims its tick: NTP's small drifts are no attack."""
    settings.NEXUS_QUEUES = {"CLOCK_TOLERANCE": timedelta(minutes=10)}
    job, database_now = job_on(FIVE), backend_for("default").database_now()
    worker_at(database_now - FIVE, job)  # the job is known from before
    worker_at(database_now + FIVE, job).step(database_now + FIVE, inline)
    assert ticks(job) == [Every(FIVE).latest(database_now + FIVE)]


# --- the nights the clocks change --------------------------------------------------------------------------------

CHANGES = [  # zone, day, the local hour skipped (forward) or repeated (back)
    ("Europe/Stockholm", date(2025, 3, 30), "forward", 2), ("Europe/Stockholm", date(2025, 10, 26), "back", 2),
    ("America/New_York", date(2025, 3, 9), "forward", 2), ("America/New_York", date(2025, 11, 2), "back", 1),
    ("Australia/Sydney", date(2025, 10, 5), "forward", 2), ("Australia/Sydney", date(2025, 4, 6), "back", 2),
]
"""The days of 2025 the clocks change in two northern zones and a southern one (days the database's clock has passed,
so that no tick is refused as ahead of it)."""


def local(zone: ZoneInfo, day: date, hour: int, minute: int, fold: int = 0) -> datetime:
    return datetime.combine(day, time(hour, minute, fold=fold), tzinfo=zone).astimezone(UTC)


def elapsed_ticks(zone: ZoneInfo, day: date, change: str, hour: int, minutes: tuple[int, ...]) -> list[datetime]:
    """Ticks in elapsed time: every wall-clock time that exists, a repeated hour's twice."""
    found = []
    for h in range(24):
        for m in minutes:
            if not (change == "forward" and h == hour):
                found.append(local(zone, day, h, m))
            if change == "back" and h == hour:
                found.append(local(zone, day, h, m, fold=1))
    return sorted(found)


def run_the_day(job: type[PeriodicJob], zone: ZoneInfo, day: date) -> tuple[list[datetime], int]:
    """Two workers step through the local day every 10 s of their clocks, reading their settings every 10 minutes;
    the ticks run, and the claims made."""
    start = datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)
    end = datetime.combine(day + timedelta(days=1), time(), tzinfo=zone).astimezone(UTC)
    workers = [worker_at(start - STEP, job) for _ in range(2)]
    claims = Claims()
    with connection.execute_wrapper(claims):
        now = start
        while now < end:
            for worker in workers:  # both step before either reads what the other claimed: two claims a tick
                worker.step(now, inline)
            for worker in workers:
                if (now - start) % timedelta(minutes=10) == timedelta(0):
                    worker.read_settings(now)
            now += STEP
    return ticks(job), claims.count


@pytest.mark.parametrize("zone, day, change, hour", CHANGES, ids=[f"{z}-{d}" for z, d, *_ in CHANGES])
def test_periodic_clock__hourly_cron_runs_every_elapsed_hour_across_a_change(zone: str, day: date, change: str,
                                                                              hour: int):
    """``0 * * * *`` ticks in elapsed time: 23 runs the day the clocks go forward, 25 the day they go back (the
    repeated hour runs twice); each tick claimed once by each worker, never in a loop."""
    found, claimed = run_the_day(job_on("0 * * * *", zone), ZoneInfo(zone), day)
    assert found == elapsed_ticks(ZoneInfo(zone), day, change, hour, (0,))
    assert len(found) == {"forward": 23, "back": 25}[change] and claimed == 2 * len(found)


@pytest.mark.parametrize("zone, day, change, hour", CHANGES, ids=[f"{z}-{d}" for z, d, *_ in CHANGES])
def test_periodic_clock__half_hourly_cron_runs_every_elapsed_half_hour_across_a_change(zone: str, day: date,
                                                                                       change: str, hour: int):
    """``*/30 * * * *``: 46 runs the day the clocks go forward, 50 the day they go back."""
    found, claimed = run_the_day(job_on("*/30 * * * *", zone), ZoneInfo(zone), day)
    assert found == elapsed_ticks(ZoneInfo(zone), day, change, hour, (0, 30))
    assert len(found) == {"forward": 46, "back": 50}[change] and claimed == 2 * len(found)


@pytest.mark.parametrize("zone, day, change, hour", CHANGES, ids=[f"{z}-{d}" for z, d, *_ in CHANGES])
def test_periodic_clock__daily_cron_in_the_changing_hour_runs_once(zone: str, day: date, change: str, hour: int):
    """A daily time in the hour that changes is wall-clock time: skipped, it runs at the first minute after the
    change; repeated, it runs the first time only."""
    found, claimed = run_the_day(job_on(f"30 {hour} * * *", zone), ZoneInfo(zone), day)
    expected = local(ZoneInfo(zone), day, hour + 1, 0) if change == "forward" else local(ZoneInfo(zone), day, hour, 30)
    assert found == [expected] and claimed == 2


# --- scheduled queue jobs ----------------------------------------------------------------------------------------


def test_queue_timetable__a_start_request_from_a_host_behind_starts_a_drain():
    """A start request stored by a host whose clock runs an hour behind the worker's is new all the same: it starts a
    drain once, and not again until another request or the next tick."""
    start = datetime(2025, 6, 1, 12, 20, tzinfo=UTC)  # the next tick is at 13:00
    timetable = QueueTimetable(Every(HOUR), last_drain=start - STEP)
    assert not timetable.due(start + STEP, None)
    behind = start + 2 * STEP - HOUR  # the request's time, by the clock of the host that made it
    assert timetable.due(start + 2 * STEP, behind)
    timetable.ran_dry()
    assert not timetable.due(start + 3 * STEP, behind)
    assert timetable.due(start + 4 * STEP, behind + STEP)


def test_queue_timetable__a_request_standing_from_before_the_last_run_starts_no_drain():
    """At a worker's first look, a request older than the queue's last run was served already."""
    last_run = datetime(2025, 6, 1, 12, 20, tzinfo=UTC)
    timetable = QueueTimetable(Every(HOUR), last_drain=last_run)
    assert not timetable.due(last_run + STEP, last_run - STEP)
    assert QueueTimetable(Every(HOUR), last_drain=last_run).due(last_run + STEP, last_run + STEP / 2)


@pytest.mark.django_db(transaction=True)
def test_worker__a_last_run_stored_ahead_of_the_database_does_not_hold_a_scheduled_queue_back(caplog):
    """A scheduled queue whose last run started an hour ahead of the database's clock (its worker's clock ran
    ahead) is drained by the next worker at start, as a queue never run, not an hour later."""
    database_now = backend_for("default").database_now()
    JobRun.objects.create(job=DigestJob.name(), queue=Digest.queue_name(), correlation_id="ahead",
                          worker="fast-host:4242", started_at=database_now + HOUR, finished_at=database_now + HOUR)
    enqueue(Digest(text="waiting"))
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True, listen=False).sweep()
    assert list(Digest.queue_items().values_list("status", flat=True)) != [Status.PENDING]
    assert clock_records(caplog, "schedule_future_run")
