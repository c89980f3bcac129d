"""A queue's ``rate_limit`` read strictly: ``"1/ms"`` was read as one a minute (the plural ``s`` swallowed after
``m``), and ``"1/99999999999d"`` raised ``OverflowError``; each is now a ``ConfigurationError`` naming the class and
the value, so that the class is never made with a limit its author did not write."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nexus_queues import QueueMessage
from nexus_queues.exceptions import ConfigurationError
from nexus_queues.flow_limits import Rate, parse_rate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("rate", [
    "1/ms",  # milliseconds: read as a minute
    "1/us", "1/ns", "1/hs", "1/ds", "1/ss", "1/mss",  # a unit with an s that is no plural
    "1/99999999999d", "1/36526days", "1/876601h",  # longer than 100 years; the first overflowed timedelta
    "1/\u0661s", "\u0661/s",  # digits that are not ASCII
    "1/S", "1/Min",
])  # fmt: skip
def test_rate_limit__what_is_not_a_rate_fails_the_class(scratch: None, rate: str) -> None:
    """Each fails the class with a ConfigurationError naming the class, the option and the value; no queue is made."""
    with pytest.raises(ConfigurationError) as caught:

        class Throttled(QueueMessage, queue="throttled", rate_limit=rate):
            __module__ = "tests.testapp.scratch"
            n: int = 0

    assert str(caught.value).split("<locals>.", 1)[1].startswith(f"Throttled: rate_limit {rate!r} ")


@pytest.mark.parametrize(("rate", "seconds"), [
    ("1/s", 1), ("2/sec", 1), ("2/secs", 1), ("3/second", 1), ("3/seconds", 1),
    ("4/m", 60), ("4/min", 60), ("5/mins", 60), ("5/minute", 60), ("5/minutes", 60),
    ("6/h", 3600), ("6/hour", 3600), ("6/hours", 3600),
    ("7/d", 86400), ("7/day", 86400), ("7/days", 86400),
    ("8/10s", 10), (" 9 / 5 min ", 300), ("1/36525days", 36525 * 86400),
])  # fmt: skip
def test_parse_rate__every_documented_unit(rate: str, seconds: int) -> None:
    """The units the flow-control guide lists, and their plurals, read as written."""
    read = parse_rate(rate)
    assert read == Rate(int(rate.split("/")[0]), timedelta(seconds=seconds))
    assert parse_rate(str(read)) == read
