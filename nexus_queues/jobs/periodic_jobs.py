"""Periodic jobs: work on a schedule, not tied to a queue, found in each installed app's ``jobs`` module."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, ClassVar, TypeVar

from ..exceptions import NotRegistered
from .schedules import Schedule, schedule_of

F = TypeVar("F", bound=Callable[[], Any])


class PeriodicJob:
    """Runs :meth:`run` once per tick of ``schedule`` across every worker. Subclass it in an app's ``jobs`` module,
    or decorate a function with :func:`periodic`.

    ``schedule`` is a cron expression (``"0 3 * * *"``, read in ``time_zone``, default ``TIME_ZONE``) or a
    ``timedelta``. The database makes each tick run once: its run row, unique per job and tick, is committed
    before the job runs.
    """

    schedule: ClassVar[str | timedelta]
    time_zone: ClassVar[str | None] = None
    """The time zone of a cron schedule (default: the ``TIME_ZONE`` setting)."""
    category: ClassVar[str] = ""
    """The group the admin's jobs page shows it in."""
    catch_up: ClassVar[bool] = True
    """After ticks missed while no worker ran: run once when one comes back (True), or wait for the next tick."""
    database: ClassVar[str] = "default"
    """The database alias that holds its runs and settings."""

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not abstract:
            periodic_jobs.register(cls)

    @classmethod
    def name(cls) -> str:
        """The job's dotted path, as recorded on its runs."""
        return f"{cls.__module__}.{cls.__qualname__}"

    @classmethod
    def get_schedule(cls) -> Schedule:
        """The job's schedule; :class:`~nexus_queues.exceptions.InvalidSchedule` when it is not one."""
        return schedule_of(getattr(cls, "schedule", None), cls.time_zone)  # type: ignore[arg-type]

    @classmethod
    def timetable(cls) -> Schedule:
        """Deprecated: :meth:`get_schedule`."""
        warnings.warn("PeriodicJob.timetable() is deprecated: call get_schedule().", DeprecationWarning, stacklevel=2)
        return cls.get_schedule()

    def run(self) -> None:
        """Do the job's work; an exception marks the run failed, with its traceback."""
        raise NotImplementedError(f"{self.name()} must implement run().")


def periodic(
    schedule: str | timedelta, *, time_zone: str | None = None, category: str = "", catch_up: bool = True,
    database: str = "default",
) -> Callable[[F], F]:
    """Make a function of no arguments a periodic job named for its dotted path (see :class:`PeriodicJob`)."""

    def register(function: F) -> F:
        attrs = {
            "__module__": function.__module__, "__qualname__": function.__qualname__, "__doc__": function.__doc__,
            "schedule": schedule, "time_zone": time_zone, "category": category, "catch_up": catch_up,
            "database": database, "run": lambda self: function(),
        }
        type(function.__name__, (PeriodicJob,), attrs)
        return function

    return register


class PeriodicJobRegistry:
    """Every periodic job known to this process, by name."""

    def __init__(self) -> None:
        self._jobs: dict[str, type[PeriodicJob]] = {}

    def register(self, job: type[PeriodicJob]) -> None:
        """Add a job (a module imported again replaces its jobs)."""
        self._jobs[job.name()] = job

    def get(self, name: str) -> type[PeriodicJob]:
        """The job called ``name``, or :class:`NotRegistered`."""
        try:
            return self._jobs[name]
        except KeyError:
            raise NotRegistered(f"No periodic job is named {name!r}.") from None

    def __iter__(self) -> Iterator[type[PeriodicJob]]:
        return iter(sorted(self._jobs.values(), key=lambda job: job.name()))

    def __len__(self) -> int:
        return len(self._jobs)


periodic_jobs = PeriodicJobRegistry()
