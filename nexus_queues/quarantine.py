"""Rows Python cannot read, set to Error so that they never block a queue.

A timestamp outside the years 1 to 9999 (PostgreSQL's BC dates and ``infinity``, MariaDB's zero date),
written by raw SQL, another tool or an older version, fails every read of its row, so every lease or
dispatch step that met it would fail again. Such a row becomes Error instead, its message naming the
column and what it held, and the column is cleared (NULL, or now where it cannot be NULL), so that
operators can open the row, fix it and queue it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DataError
from django.db.models import DateTimeField, Field, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from .exceptions import UnreadableRow
from .failures import describe, message_of
from .status import Status

T = TypeVar("T")

UNREADABLE = (DataError, ValueError, TypeError, AttributeError, OverflowError)
"""What reading such a row raises: psycopg's DataError on PostgreSQL, Django's converters' errors elsewhere."""

SUSPECTS = 100
"""The most rows examined after a read failed."""


def read_around(read: Callable[[], T], suspects: QuerySet[Any], limit: int = SUSPECTS) -> T:
    """``read()``; when it fails on a row Python cannot read, quarantine the first ``limit`` ``suspects``
    and read again. The failure stands when none of them was unreadable."""
    try:
        return read()
    except UNREADABLE:
        if not quarantine(suspects, limit):
            raise
    return read()


def quarantine(rows: QuerySet[Any], limit: int = SUSPECTS) -> int:
    """Set to Error each of the first ``limit`` ``rows`` that Python cannot read; how many."""
    count = 0
    for pk in rows.values_list("pk", flat=True)[:limit]:
        row = rows.filter(pk=pk)
        unreadable = _unreadable_fields(row)
        if unreadable:
            count += _set_error(row, unreadable)
    return count


def _unreadable_fields(row: QuerySet[Any]) -> dict[Field[Any, Any], Exception]:
    fields = row.model._meta.concrete_fields
    try:
        list(row.values_list(*(f.attname for f in fields)))
        return {}
    except UNREADABLE:
        pass
    found: dict[Field[Any, Any], Exception] = {}
    for field in fields:
        try:
            list(row.values_list(field.attname))
        except UNREADABLE as exc:
            found[field] = exc
    return found


def _set_error(row: QuerySet[Any], unreadable: dict[Field[Any, Any], Exception]) -> int:
    now = timezone.now()
    cleared = {f.attname: None if f.null else now for f in unreadable if isinstance(f, DateTimeField)}
    what = "; ".join(_problem(row, field, exc, field.attname in cleared) for field, exc in unreadable.items())
    error = describe(UnreadableRow(f"Set to Error: {what}."))
    changes = {"status": Status.ERROR, "lease_expires_at": None, "updated_at": now, **cleared}
    # A queue's rows: a batch member counts Error in its batch (QueueItemQuerySet.update), as a failed run would.
    return row.update(error_type=error.type, error_message=error.message, error_traceback="", **changes)


def _problem(row: QuerySet[Any], field: Field[Any, Any], exc: Exception, cleared: bool) -> str:
    """What the column held, as the database writes it in text, and what became of it."""
    held = row.annotate(held=Cast(field.attname, TextField())).values_list("held", flat=True).first()
    then = ("set to NULL" if field.null else "set to now") if cleared else "left as it is"
    return f"{field.attname} held {held!r}, which Python cannot read ({message_of(exc)}); {then}"
