"""The shapes the data layer hands its backend: rows to enqueue or stage, leases to claim, merge counts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from django.db.models import Model

    from ..changes import Change
    from ..models import JobRun, QueueItem


class EnqueueRow(NamedTuple):
    """The columns every enqueue writes, in this order; the rest take their database defaults."""

    message_id: str | None
    message: str
    message_hash: str
    headers: str
    status: str | None
    """None: the queue's default status when the row is written."""
    process_at: datetime | None
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class StagedRow(NamedTuple):
    """One staged row, in the staging table's column order: a message to enqueue, or a reject."""

    token: int
    position: int
    """Orders the rows of one merge; the last of several rows with one message id wins."""
    message_id: str | None
    message: str | None
    message_hash: str | None
    headers: str | None
    status: str | None
    process_at: datetime | None
    expires_at: datetime | None
    reject: str | None
    """Why the row was rejected (JSON), or None for a message."""


STAGED_COLUMNS = StagedRow._fields


@dataclass(frozen=True)
class MergeCounts:
    """What a merge did with the staged messages (rejects are counted by their writer)."""

    new: int = 0
    """Messages whose id the queue did not hold (every message of a queue without identity)."""
    changed: int = 0
    """Messages that replaced a stored one of the same id with other JSON."""
    unchanged: int = 0
    """Messages whose id and JSON the queue already held: discarded on idempotent queues, stored again otherwise."""
    scheduled: int = 0
    """Messages stored Sleeping until their ``process_at``."""
    superseded: int = 0
    """Messages that a later one with the same id, staged in the same merge, replaced before they were stored."""


@dataclass(frozen=True, slots=True)
class Claim:
    """A lease to make: up to ``count`` Pending rows of ``model`` until ``lease_until``, under ``correlation_id``."""

    model: type[QueueItem]
    count: int
    now: datetime
    lease_until: datetime
    correlation_id: str


class Finish(NamedTuple):
    """A run whose leased rows were all processed, to end in one statement: its rows of ``ids`` deleted (or changed
    by ``change``, when the queue keeps them), the run saved as finished, its count added to ``counter``'s
    ``minute``."""

    model: type[QueueItem]
    ids: Sequence[int]
    run: JobRun
    counter: type[Model]
    minute: datetime
    seconds: float
    change: Change | None


INSERT_COLUMNS = EnqueueRow._fields
STATUS_INDEX = INSERT_COLUMNS.index("status")


def by_message_id(rows: Sequence[EnqueueRow]) -> list[EnqueueRow]:
    """Rows in message id order: concurrent upserts then lock the ids they share in the same order."""
    return sorted(rows, key=attrgetter("message_id"))
