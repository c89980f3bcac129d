"""Intervals too long for a datetime to count their ticks: refused where the job declares them, never an
``OverflowError`` in a worker, the jobs page or the API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from nexus_queues.checks import check_job_schedules
from nexus_queues.jobs.control import state_of
from nexus_queues.jobs.periodic_jobs import PeriodicJob, periodic_jobs
from nexus_queues.jobs.schedules import MAX_INTERVAL, Every, InvalidSchedule, schedule_of

MILLENNIA = timedelta(days=365 * 100_000)


@pytest.fixture
def eternal() -> Iterator[type[PeriodicJob]]:
    """A periodic job that declares an interval of 100,000 years."""

    class Eternal(PeriodicJob):
        schedule = MILLENNIA

        def run(self) -> None:
            """Never due."""

    yield Eternal
    periodic_jobs._jobs.pop(Eternal.name())


@pytest.mark.parametrize("interval", [MILLENNIA, MAX_INTERVAL + timedelta(seconds=1), timedelta.max])
def test_every__an_interval_over_100_years_is_refused_naming_the_limit(interval: timedelta) -> None:
    """An interval longer than 100 years raises InvalidSchedule saying the limit."""
    with pytest.raises(InvalidSchedule, match=r"longer than 100 years \(36525 days\)"):
        schedule_of(interval)


def test_every__the_longest_interval_counts_its_ticks() -> None:
    """An interval of exactly 100 years has a latest and a following tick."""
    every = Every(MAX_INTERVAL)
    now = datetime(2026, 11, 25, tzinfo=UTC)
    assert every.latest(now) == datetime(1970, 1, 1, tzinfo=UTC)
    assert every.following(now) == datetime(1970, 1, 1, tzinfo=UTC) + MAX_INTERVAL


def test_check_job_schedules__names_the_job_with_an_interval_over_100_years(eternal: type[PeriodicJob]) -> None:
    """``manage.py check`` fails with E001 naming the job and the limit."""
    [error] = check_job_schedules()
    assert error.id == "nexus_queues.E001" and eternal.name() in error.msg and "100 years" in error.msg


@pytest.mark.django_db
def test_state_of__shows_an_interval_over_100_years_as_invalid(eternal: type[PeriodicJob]) -> None:
    """The jobs page and the API show the schedule as invalid, where they raised OverflowError."""
    state = state_of(eternal)
    assert state.schedule.startswith("Invalid: The interval") and state.next_run is None
