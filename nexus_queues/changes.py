"""Status changes as data: each column's new value, written once for the row and for the item in memory.

A backend renders a :class:`Change` as ``SET column = %s, ...`` (or ``= other_column``); the same
object then applies itself to the items whose rows it changed, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F

from .failures import describe
from .status import Status


@dataclass(frozen=True)
class Column:
    """The value the row's column ``name`` held before the change (``previous_message`` takes ``message``)."""

    name: str


@dataclass(frozen=True)
class Change:
    """New values by column, named for the logs (``"processed"``)."""

    name: str
    values: tuple[tuple[str, Any], ...]

    def apply(self, items: Iterable[Any], changed: Sequence[int]) -> None:
        """Give the items whose ids are in ``changed`` the values their rows now hold."""
        ids = set(changed)
        for item in items:
            if item.pk in ids:
                # Every value is read before any is written, as SQL's SET does.
                item.__dict__.update({c: _raw(item, v.name) if isinstance(v, Column) else v for c, v in self.values})

    @property
    def status(self) -> str | None:
        """The status the change sets, or None when it keeps the row's."""
        return next((value for column, value in self.values if column == "status"), None)

    def as_update(self) -> dict[str, Any]:
        """The change as ``QuerySet.update()`` keyword arguments."""
        return {c: F(v.name) if isinstance(v, Column) else v for c, v in self.values}


def _raw(item: Any, name: str) -> Any:
    """The column's value as the item holds it, a stored message left unvalidated."""
    return item.__dict__[name] if name in item.__dict__ else getattr(item, name)


_NO_LEASE = (("lease_expires_at", None),)
_NO_ERROR = (("error_type", ""), ("error_message", ""), ("error_traceback", ""))


def processed(now: datetime, *, identity: bool) -> Change:
    """Processed, lease and error cleared; in a queue with ``identity`` the message becomes the previous version
    (elsewhere no later version of it comes, and the row would hold its message twice)."""
    previous = (("previous_message", Column("message")),) if identity else ()
    return Change(
        "processed",
        (("status", Status.PROCESSED), *previous, ("processed_at", now), ("updated_at", now), *_NO_LEASE, *_NO_ERROR),
    )


def failed(exc: BaseException, now: datetime) -> Change:
    """Error, keeping the exception's type, message and traceback."""
    return Change("error", (("status", Status.ERROR), *_error(exc), ("updated_at", now), *_NO_LEASE))


def rescheduled(at: datetime, now: datetime, *, reset_attempts: bool = False) -> Change:
    """Sleeping until ``at``; ``reset_attempts`` starts the attempt count afresh."""
    attempts = (("attempts", 0),) if reset_attempts else ()
    return Change(
        "rescheduled", (("status", Status.SLEEPING), ("process_at", at), ("updated_at", now), *_NO_LEASE, *attempts)
    )


def retried_later(exc: BaseException, at: datetime, now: datetime) -> Change:
    """Sleeping until ``at`` for another attempt, keeping the exception that failed this one."""
    return Change(
        "retried",
        (("status", Status.SLEEPING), ("process_at", at), *_error(exc), ("updated_at", now), *_NO_LEASE),
    )


def renewed(until: datetime, now: datetime) -> Change:
    """The lease extended to ``until``."""
    return Change("renewed", (("lease_expires_at", until), ("updated_at", now)))


def status_set(status: str, now: datetime) -> Change:
    """Any status, the lease cleared (a worker's completion then changes nothing)."""
    return Change(f"set {status}", (("status", status), ("updated_at", now), *_NO_LEASE))


def cancelled(now: datetime) -> Change:
    """Cancelled, the lease cleared; the correlation id is kept, naming the run that held it."""
    return Change("cancelled", (("status", Status.CANCELLED), ("updated_at", now), *_NO_LEASE))


def _error(exc: BaseException) -> tuple[tuple[str, Any], ...]:
    error = describe(exc)
    return (("error_type", error.type), ("error_message", error.message), ("error_traceback", error.traceback))
