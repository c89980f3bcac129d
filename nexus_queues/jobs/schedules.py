"""Schedules of jobs: a cron expression in a time zone, or a fixed interval; ticks are pure functions of ``now``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.utils import timezone

from ..exceptions import InvalidSchedule

NICKNAMES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
"""cron's shorthands, as the expressions they stand for."""

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""Where interval ticks are counted from, so that every worker computes the same ticks."""

MAX_INTERVAL = timedelta(days=36525)
"""The longest interval, 100 years: its ticks stay far inside the years a datetime holds (up to 9999)."""


class Schedule(ABC):
    """When a job is due: its ticks, as aware datetimes."""

    @abstractmethod
    def latest(self, now: datetime) -> datetime:
        """The last tick at or before ``now``."""

    @abstractmethod
    def following(self, after: datetime) -> datetime:
        """The first tick after ``after``."""

    @abstractmethod
    def describe(self) -> str:
        """The schedule in words, for operators."""


@dataclass(frozen=True)
class Cron(Schedule):
    """A five-field cron expression read in ``zone``: daylight saving changes neither skip nor double a daily tick.

    Debian cron's rules, as cronsim keeps them: an expression whose minute and hour fields are both fixed (neither
    starts with ``*``) names wall-clock times, so a time skipped when the clocks go forward runs at the first minute
    after the change, and a time that occurs twice when they go back runs the first time only. Any other expression
    (``0 * * * *``, ``*/30 * * * *``) ticks in elapsed time: the repeated hour has its ticks twice, the skipped hour
    none.
    """

    expression: str
    zone: ZoneInfo

    def __post_init__(self) -> None:
        try:
            CronSim(self._fields, datetime.now(self.zone))
        except CronSimError as exc:
            raise InvalidSchedule(f"{self.expression!r} is not a cron expression: {exc}.") from exc

    @property
    def _fields(self) -> str:
        return NICKNAMES.get(self.expression.strip().lower(), self.expression)

    def latest(self, now: datetime) -> datetime:
        """The last tick at or before ``now``: one that :meth:`following` reaches, so the two never disagree."""
        start = now.astimezone(self.zone).replace(microsecond=0) + timedelta(seconds=1)
        tick = next(CronSim(self._fields, start, reverse=True)).astimezone(UTC)
        # cronsim's backward steps miss the second ticks of a repeated hour that its forward steps make.
        while (later := self.following(tick)) <= now:
            tick = later
        return tick

    def following(self, after: datetime) -> datetime:
        """The first tick after ``after``."""
        ticks = CronSim(self._fields, after.astimezone(self.zone))
        # From inside a repeated hour, cronsim's wall-clock steps can land on the hour's first pass: before ``after``.
        while (tick := next(ticks).astimezone(UTC)) <= after:
            pass
        return tick

    def describe(self) -> str:
        """E.g. "At 03:00 every day (Europe/Stockholm)"."""
        return f"{CronSim(self._fields, datetime.now(self.zone)).explain()} ({self.zone.key})"


@dataclass(frozen=True)
class Every(Schedule):
    """A fixed interval of elapsed time, its ticks counted from the Unix epoch (so ``timedelta(hours=1)`` ticks on
    the hour in UTC); for wall-clock times in a time zone, use a cron expression."""

    interval: timedelta

    def __post_init__(self) -> None:
        if self.interval < timedelta(seconds=1):
            raise InvalidSchedule(f"The interval {self.interval} is shorter than one second.")
        if self.interval > MAX_INTERVAL:
            raise InvalidSchedule(f"The interval {self.interval} is longer than 100 years ({MAX_INTERVAL.days} days), "
                                  "the longest a schedule takes.")

    def latest(self, now: datetime) -> datetime:
        """The last tick at or before ``now``."""
        return EPOCH + self.interval * ((now - EPOCH) // self.interval)

    def following(self, after: datetime) -> datetime:
        """The first tick after ``after``."""
        return self.latest(after) + self.interval

    def describe(self) -> str:
        """E.g. "Every 5 minutes"."""
        return f"Every {_in_words(self.interval)}"


def schedule_of(value: str | timedelta, zone: str | None = None) -> Schedule:
    """The schedule a job declares: a cron expression (read in ``zone``, default ``TIME_ZONE``) or an interval."""
    if isinstance(value, timedelta):
        return Every(value)
    if isinstance(value, str):
        return Cron(value, _zone(zone))
    raise InvalidSchedule(f"A schedule is a cron expression (str) or a timedelta, not {type(value).__name__}.")


def _zone(name: str | None) -> ZoneInfo:
    if name is None:
        default = timezone.get_default_timezone()
        return default if isinstance(default, ZoneInfo) else ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidSchedule(f"{name!r} is not a known time zone.") from exc


def _in_words(interval: timedelta) -> str:
    seconds = int(interval.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0 and interval.microseconds == 0:
            count = seconds // size
            return unit if count == 1 else f"{count} {unit}s"
    return f"{interval.total_seconds():g} seconds"
