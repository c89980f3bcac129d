"""What every engine stores and Python reads back: the range of times and of integers, how deep JSON may nest, which
text, and what a batch's label may be."""

from __future__ import annotations

import reprlib
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from .exceptions import InvalidArgument, UnstorableValue

EARLIEST_DATETIME = datetime(1000, 1, 1, tzinfo=UTC)
"""The earliest time stored: MariaDB's DATETIME starts at the year 1000."""

LATEST_DATETIME = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
"""The latest time stored: a day before Python's last, so that any TIME_ZONE can show it."""

MAX_JSON_DEPTH = 31
"""How deep objects and arrays may nest in a message or its headers, the outermost counting as 1
(MariaDB's JSON_VALID refuses 32)."""

MIN_INTEGER, MAX_INTEGER = -(2**63), 2**63 - 1
"""The integers a message may hold: the signed 64-bit range, which every engine's JSON reads back exactly (SQLite's
JSON functions read a larger one as a float) and Spark's LongType holds."""

MAX_LABEL_LENGTH = 200
"""How many characters a batch's label may have."""

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


def unstorable_text(text: str) -> str | None:
    """Why not every engine stores ``text`` (NUL, a lone surrogate), or None when they all do."""
    if "\x00" in text:
        return "holds NUL (\\x00), which PostgreSQL cannot store."
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return "holds a lone surrogate (\\ud800 to \\udfff), which is not UTF-8."
    return None


def unstorable_integer(value: int) -> str | None:
    """Why not every engine reads ``value`` back (outside :data:`MIN_INTEGER` to :data:`MAX_INTEGER`), or None."""
    if MIN_INTEGER <= value <= MAX_INTEGER:
        return None
    # str() of an integer stops at 4300 digits: a long one is told by its size.
    shown = value if value.bit_length() <= 128 else f"An integer of {value.bit_length()} bits"
    return f"{shown} is outside the signed 64-bit range -2**63 to 2**63-1 (MIN_INTEGER to MAX_INTEGER)."


def check_label(name: str, value: object) -> str:
    """``value`` when it can be a batch's label (text of at most :data:`MAX_LABEL_LENGTH` characters that every
    engine stores); else :class:`InvalidArgument` naming ``name`` and saying why."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be text, got {type(value).__name__}.")
    too_long = f"has {len(value)} characters, more than {MAX_LABEL_LENGTH} (MAX_LABEL_LENGTH)."
    problem = too_long if len(value) > MAX_LABEL_LENGTH else unstorable_text(value)
    if problem:
        raise InvalidArgument(f"{name} {reprlib.repr(value)} {problem}")
    return value
