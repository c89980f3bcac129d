"""Statuses: a message's (the built-in ones and the rules for custom ones) and a queue's health."""

from __future__ import annotations

import re
from enum import StrEnum

from .exceptions import InvalidStatus

MAX_STATUS_LENGTH = 50
_CUSTOM_STATUS = re.compile(r"^[A-Za-z][A-Za-z0-9 _.\-]*$")


class Status(StrEnum):
    """The statuses the system itself gives messages. Any other short text is a custom status."""

    PENDING = "Pending"
    LEASED = "Leased"
    PROCESSED = "Processed"
    ERROR = "Error"
    ABANDONED = "Abandoned"
    SLEEPING = "Sleeping"
    CANCELLED = "Cancelled"


class HealthStatus(StrEnum):
    """A queue's health, as its health check reports it (and what it reports when the queue holds Error messages)."""

    HEALTHY = "healthy"
    DEGRADED = "degraded"
    UNHEALTHY = "unhealthy"


def validate_status(status: str) -> str:
    """Return ``status`` as stored, or raise :class:`InvalidStatus` saying what is wrong.

    Custom statuses start with a letter, hold letters, digits, spaces, ``_ . -``, fit in
    50 characters, and may not be a built-in status spelled in another case.
    """
    if not isinstance(status, str):
        raise InvalidStatus(f"A status is text, not {type(status).__name__}: {status!r}.")
    if len(status) > MAX_STATUS_LENGTH:
        raise InvalidStatus(f"Status {status!r} is longer than {MAX_STATUS_LENGTH} characters.")
    if not _CUSTOM_STATUS.match(status) or status != status.strip():
        raise InvalidStatus(
            f"Status {status!r} is malformed: start with a letter; use letters, digits, spaces, '_', '.' or '-'."
        )
    for builtin in Status:
        if status.lower() == builtin.value.lower() and status != builtin.value:
            raise InvalidStatus(f"Status {status!r} differs from the built-in {builtin.value!r} only in case.")
    return str(status)


SETTABLE_STATUSES = tuple(s.value for s in Status if s not in (Status.LEASED, Status.SLEEPING))
"""The built-in statuses an operator or job may set directly (:func:`validate_settable_status` refuses the others)."""


def validate_settable_status(status: str) -> str:
    """Validate a status an operator or job may set directly (not Leased, not Sleeping)."""
    status = validate_status(status)
    if status == Status.LEASED:
        raise InvalidStatus("Only lease() sets messages Leased.")
    if status == Status.SLEEPING:
        raise InvalidStatus("Sleeping needs a time: use reschedule(at) or enqueue(..., at=...).")
    return status
