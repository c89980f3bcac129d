"""Schedule arithmetic: pure functions of an injected ``now``, including daylight-saving changes."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from nexus_queues.jobs.schedules import Cron, Every, InvalidSchedule, schedule_of

STOCKHOLM = ZoneInfo("Europe/Stockholm")


def local(*args: int, fold: int = 0) -> datetime:
    return datetime(*args, tzinfo=STOCKHOLM, fold=fold)


def ticks(schedule: Cron | Every, start: datetime, count: int) -> list[datetime]:
    found = [schedule.following(start)]
    while len(found) < count:
        found.append(schedule.following(found[-1]))
    return found


def test_cron__daily_tick_is_neither_skipped_nor_doubled_when_clocks_go_forward():
    """02:30 does not exist on 29 March 2026 in Stockholm: the daily tick comes at 03:00 that day, once."""
    daily = Cron("30 2 * * *", STOCKHOLM)
    found = [t.astimezone(STOCKHOLM) for t in ticks(daily, local(2026, 3, 27, 12), 3)]
    assert found == [local(2026, 3, 28, 2, 30), local(2026, 3, 29, 3, 0), local(2026, 3, 30, 2, 30)]


def test_cron__daily_tick_runs_once_when_clocks_go_back():
    """02:30 happens twice on 25 October 2026 in Stockholm: the daily tick comes the first time only."""
    daily = Cron("30 2 * * *", STOCKHOLM)
    found = ticks(daily, local(2026, 10, 24, 12), 3)
    assert found == [
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),  # 02:30 CEST; the 02:30 CET an hour later is not a tick
        datetime(2026, 10, 26, 1, 30, tzinfo=UTC),
        datetime(2026, 10, 27, 1, 30, tzinfo=UTC),
    ]


@pytest.mark.parametrize("now", [
    local(2026, 3, 29, 3, 10),  # just after the forward change
    local(2026, 10, 25, 2, 45, fold=1),  # in the repeated hour, after the tick
    local(2026, 10, 25, 4, 0),
    local(2026, 6, 1, 2, 30),  # exactly on a tick
])
def test_cron__latest_is_the_following_tick_of_the_previous_day(now: datetime):
    """Stepping back from ``now`` finds the same tick that stepping forward from a day before reaches."""
    daily = Cron("30 2 * * *", STOCKHOLM)
    latest = daily.latest(now)
    assert latest <= now
    assert daily.following(now - timedelta(days=1)) == latest


def test_cron__latest_is_at_or_before_now_and_following_is_after():
    """Ticks bracket ``now``: the latest at or before it, the following strictly after it."""
    every_five = Cron("*/5 * * * *", ZoneInfo("UTC"))
    now = datetime(2026, 11, 23, 14, 7, 31, 500, tzinfo=UTC)
    assert every_five.latest(now) == datetime(2026, 11, 23, 14, 5, tzinfo=UTC)
    assert every_five.following(now) == datetime(2026, 11, 23, 14, 10, tzinfo=UTC)
    assert every_five.latest(datetime(2026, 11, 23, 14, 10, tzinfo=UTC)) == datetime(2026, 11, 23, 14, 10, tzinfo=UTC)


def test_cron__shorthands_and_words():
    """``@daily`` is midnight every day; the words name the time zone."""
    daily = schedule_of("@daily", "Europe/Stockholm")
    assert daily.following(local(2026, 11, 23, 14)) == local(2026, 11, 24).astimezone(UTC)
    assert daily.describe() == "At 00:00 every day (Europe/Stockholm)"


def test_cron__default_time_zone_is_the_time_zone_setting(settings):
    """Without a time zone, a cron schedule reads ``TIME_ZONE``."""
    settings.TIME_ZONE = "Europe/Stockholm"
    assert schedule_of("0 3 * * *").following(local(2026, 11, 23, 14)) == local(2026, 11, 24, 3).astimezone(UTC)


@pytest.mark.parametrize("expression, zone, problem", [
    ("0 3 * *", None, "is not a cron expression"),
    ("61 * * * *", None, "is not a cron expression"),
    ("0 3 * * *", "Mars/Olympus", "is not a known time zone"),
])
def test_schedule_of__refuses_what_is_not_a_schedule(expression: str, zone: str | None, problem: str):
    """A bad expression or time zone raises InvalidSchedule saying which."""
    with pytest.raises(InvalidSchedule, match=problem):
        schedule_of(expression, zone)


def test_every__ticks_count_from_the_epoch():
    """Every worker computes the same interval ticks: multiples of the interval since 1970 (UTC)."""
    every = Every(timedelta(minutes=5))
    now = datetime(2026, 11, 23, 14, 7, tzinfo=STOCKHOLM)  # 13:07 UTC
    assert every.latest(now) == datetime(2026, 11, 23, 13, 5, tzinfo=UTC)
    assert every.following(now) == datetime(2026, 11, 23, 13, 10, tzinfo=UTC)
    assert every.describe() == "Every 5 minutes"
    assert Every(timedelta(hours=1)).describe() == "Every hour"
    assert Every(timedelta(seconds=90)).describe() == "Every 90 seconds"


@pytest.mark.parametrize("value", [timedelta(0), timedelta(milliseconds=500), 5])
def test_every__refuses_intervals_under_a_second_and_other_types(value: object):
    """An interval under a second, or a schedule that is neither text nor timedelta, is refused."""
    with pytest.raises(InvalidSchedule):
        schedule_of(value)  # type: ignore[arg-type]


CHANGE_DAYS = [
    pytest.param(zone, day, id=f"{zone}-{day[0]}-{day[1]:02}-{day[2]:02}") for zone, day in [
        ("Europe/Stockholm", (2026, 3, 29)), ("Europe/Stockholm", (2026, 10, 25)),
        ("America/New_York", (2026, 3, 8)), ("America/New_York", (2026, 11, 1)),
        ("Australia/Sydney", (2026, 10, 4)), ("Australia/Sydney", (2026, 4, 5)),
    ]
]
"""The days the clocks go forward, then back, in 2026: two northern zones and a southern one."""


@pytest.mark.parametrize("zone, day", CHANGE_DAYS)
@pytest.mark.parametrize("expression", ["0 * * * *", "*/30 * * * *", "30 2 * * *", "0 1-3 * * *", "* * * * *"])
def test_cron__latest_and_following_bracket_every_moment_of_a_change_day(expression: str, zone: str, day: tuple):
    """At every moment of a day the clocks change, ``latest`` is a tick ``following`` reaches, at or before now,
    and ``following`` is after now: a worker that claims ``latest`` once a tick is due never claims it again."""
    cron = Cron(expression, ZoneInfo(zone))
    start = datetime(*day, tzinfo=ZoneInfo(zone)).astimezone(UTC)
    for step in range(0, 26 * 3600, 97):  # not a divisor of a minute: lands on every second of the minute in turn
        now = start + timedelta(seconds=step)
        latest, following = cron.latest(now), cron.following(now)
        assert latest <= now < following, now
        assert cron.following(latest) == following, now
