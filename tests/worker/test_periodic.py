"""Periodic jobs in the worker, with an injected ``now``: each tick is claimed once by a committed run row."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import pytest
from django.utils import timezone

from nexus_queues.jobs.control import JobSwitchedOff, run_now, set_job_enabled
from nexus_queues.jobs.periodic_jobs import PeriodicJob
from nexus_queues.jobs.schedules import Every
from nexus_queues.jobs.timetables import QueueTimetable
from nexus_queues.models import JobRun, PeriodicJobSettings
from nexus_queues.worker.periodic import PeriodicRunner

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)
FIVE = timedelta(minutes=5)


class Tally(PeriodicJob, abstract=True):
    """Counts its runs; fails when ``failing`` is set."""

    schedule = FIVE
    ran: ClassVar[list[str]] = []
    failing: ClassVar[bool] = False

    def run(self) -> None:
        if self.failing:
            raise ValueError("the tally is broken")
        self.ran.append("ran")


class Skipper(Tally, abstract=True):
    """A tally that waits for the next tick after missed ones."""

    catch_up = False


@pytest.fixture(autouse=True)
def fresh_tally():
    Tally.ran, Tally.failing = [], False


def inline(work: Callable[[], None]) -> None:
    work()


def runner_at(now: datetime, *job_classes: type[PeriodicJob]) -> PeriodicRunner:
    runner = PeriodicRunner(list(job_classes) or [Tally])
    runner.read_settings(now)
    return runner


def runs(job: type[PeriodicJob] = Tally) -> list[JobRun]:
    return list(JobRun.objects.filter(job=job.name()).order_by("tick"))


def test_runner__new_job_waits_for_its_next_tick():
    """A job seen for the first time does not run for a tick that passed before it was seen."""
    runner = runner_at(T0 + timedelta(minutes=3))
    runner.step(T0 + timedelta(minutes=4), inline)
    assert runs() == []
    runner.step(T0 + timedelta(minutes=5, seconds=1), inline)
    assert [r.tick for r in runs()] == [T0 + FIVE] and Tally.ran == ["ran"]


def test_runner__two_workers_one_tick_one_run():
    """Two workers offering the same tick: the unique run row lets one of them run it."""
    first, second = runner_at(T0), runner_at(T0)
    for runner in (first, second, first, second):
        runner.step(T0 + FIVE, inline)
    [run] = runs()
    assert Tally.ran == ["ran"] and run.tick == T0 + FIVE and run.finished_at is not None and run.processed == 1


def test_runner__missed_ticks_run_once_when_a_worker_comes_back():
    """After three missed ticks, one run, for the latest of them."""
    runner_at(T0).step(T0 + FIVE, inline)
    runner_at(T0 + 4 * FIVE + timedelta(seconds=10)).step(T0 + 4 * FIVE + timedelta(seconds=10), inline)
    assert [r.tick for r in runs()] == [T0 + FIVE, T0 + 4 * FIVE] and len(Tally.ran) == 2


def test_runner__a_job_that_does_not_catch_up_waits_for_the_next_tick():
    """With ``catch_up = False``, ticks missed while no worker ran are skipped."""
    runner_at(T0, Skipper).step(T0 + FIVE, inline)
    later = T0 + 4 * FIVE + timedelta(seconds=10)
    runner = runner_at(later, Skipper)
    runner.step(later, inline)
    assert [r.tick for r in runs(Skipper)] == [T0 + FIVE]
    runner.step(T0 + 5 * FIVE, inline)
    assert [r.tick for r in runs(Skipper)] == [T0 + FIVE, T0 + 5 * FIVE]


def test_runner__failure_is_recorded_with_its_traceback():
    """A run that raises is finished, failed, with the exception and traceback stored."""
    Tally.failing = True
    runner_at(T0).step(T0 + FIVE, inline)
    [run] = runs()
    assert run.finished_at is not None and run.errors == 1 and run.processed == 0
    assert "ValueError: the tally is broken" in run.error and "Traceback" in run.error and "in run" in run.error


def test_runner__switched_off_job_skips_its_ticks_and_does_not_catch_up_when_on_again():
    """Ticks while off are not run; switched on, the job waits for its next tick."""
    runner = runner_at(T0)
    PeriodicJobSettings.objects.filter(job=Tally.name()).update(enabled=False)
    runner.read_settings(T0)
    runner.step(T0 + FIVE, inline)
    runner.step(T0 + 2 * FIVE, inline)
    assert runs() == []
    set_job_enabled(Tally, True)  # ticks count from the real now: long after T0
    restarted = runner_at(T0 + 3 * FIVE)
    restarted.step(T0 + 3 * FIVE, inline)
    assert runs() == []


def test_runner__run_request_runs_once_whatever_the_schedule():
    """"Run now" is claimed like a tick (the request's time), once across workers."""
    first, second = runner_at(T0), runner_at(T0)
    run_now(Tally)
    requested_at = PeriodicJobSettings.objects.get(job=Tally.name()).run_requested_at
    for runner in (first, second):
        runner.read_settings(T0 + timedelta(seconds=1))
        runner.step(T0 + timedelta(seconds=1), inline)
        runner.step(T0 + timedelta(seconds=2), inline)
    assert [r.tick for r in runs()] == [requested_at] and Tally.ran == ["ran"]
    assert PeriodicJobSettings.objects.get(job=Tally.name()).run_requested_at is None  # answered


def test_runner__a_run_request_made_while_no_worker_ran_is_honoured():
    """A request older than the worker's start runs once; the next worker does not run it again, even once an
    operator deleted the run."""
    run_now(Tally)
    later = timezone.now() + timedelta(seconds=1)
    runner_at(later).step(later, inline)
    assert Tally.ran == ["ran"] and len(runs()) == 1
    JobRun.objects.all().delete()
    runner_at(later).step(later, inline)
    assert Tally.ran == ["ran"]


def test_runner__a_switched_off_job_refuses_a_run_request():
    """A request cannot be made for a switched-off job."""
    runner_at(T0)
    set_job_enabled(Tally, False)
    with pytest.raises(JobSwitchedOff, match="switched off"):
        run_now(Tally)
    assert PeriodicJobSettings.objects.get(job=Tally.name()).run_requested_at is None


def test_queue_timetable__drains_from_a_tick_or_request_until_dry():
    """A scheduled queue job leases from a tick until a run leases nothing, then waits for the next tick or a
    start request it has not seen (told by its value: the time is the requesting host's)."""
    timetable = QueueTimetable(Every(FIVE), last_drain=T0)
    assert not timetable.due(T0 + timedelta(minutes=4), None)
    assert timetable.due(T0 + FIVE, None) and timetable.due(T0 + FIVE + timedelta(seconds=30), None)
    timetable.ran_dry()
    assert timetable.due(T0 + timedelta(minutes=6), requested_at=T0 + timedelta(minutes=2))
    timetable.ran_dry()
    assert not timetable.due(T0 + timedelta(minutes=6, seconds=10), requested_at=T0 + timedelta(minutes=2))
    assert timetable.due(T0 + timedelta(minutes=7), requested_at=T0 + timedelta(minutes=6, seconds=30))
    timetable.ran_dry()
    assert not timetable.due(T0 + timedelta(minutes=8), requested_at=T0 + timedelta(minutes=6, seconds=30))


def test_queue_timetable__worker_down_across_a_tick_drains_when_it_comes_back():
    """Counting from the queue's last run, a tick missed while no worker ran starts a drain at once."""
    assert QueueTimetable(Every(FIVE), last_drain=T0).due(T0 + 3 * FIVE + timedelta(seconds=1), None)


def test_runner__a_handled_tick_is_not_run_again_once_its_run_is_deleted():
    """Claiming a tick records it in the job's settings: retention may delete the run, and a worker that starts
    afterwards still waits for the next tick."""
    runner_at(T0).step(T0 + FIVE, inline)
    assert PeriodicJobSettings.objects.get(job=Tally.name()).ticks_since == T0 + FIVE
    JobRun.objects.all().delete()
    runner_at(T0 + FIVE + timedelta(minutes=1)).step(T0 + FIVE + timedelta(minutes=1), inline)
    assert Tally.ran == ["ran"]
