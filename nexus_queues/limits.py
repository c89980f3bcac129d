"""What every engine stores and Python reads back: the range of times and how deep JSON may nest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from .exceptions import UnstorableValue

EARLIEST_DATETIME = datetime(1000, 1, 1, tzinfo=UTC)
"""The earliest time stored: MariaDB's DATETIME starts at the year 1000."""

LATEST_DATETIME = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
"""The latest time stored: a day before Python's last, so that any TIME_ZONE can show it."""

MAX_JSON_DEPTH = 31
"""How deep objects and arrays may nest in a message or its headers, the outermost counting as 1
(MariaDB's JSON_VALID refuses 32)."""

_RANGE = (
    f"the supported range {EARLIEST_DATETIME.isoformat()} to {LATEST_DATETIME.isoformat()} "
    "(EARLIEST_DATETIME to LATEST_DATETIME)"
)


def check_datetime(name: str, value: datetime) -> None:
    """Raise :class:`UnstorableValue` naming ``name`` unless ``value`` is within the stored range."""
    # A naive time goes to the database as UTC (or, without USE_TZ, as it is): compare its wall time.
    moment = value.replace(tzinfo=UTC) if timezone.is_naive(value) else value
    if not EARLIEST_DATETIME <= moment <= LATEST_DATETIME:
        raise UnstorableValue(name, f"{value.isoformat()} is outside {_RANGE}.")


def after(now: datetime, delay: timedelta) -> datetime:
    """``now + delay``, refused with :class:`UnstorableValue` naming ``delay`` when outside the stored range."""
    try:
        at = now + delay
    except OverflowError as exc:
        raise UnstorableValue("delay", f"now + {delay!r} is outside {_RANGE}.") from exc
    check_datetime("delay", at)
    return at
