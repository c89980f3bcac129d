"""Batch membership: a message names its batch in its headers, and the batch's counters move with its members.

Every change of a member to or from a finished status (Processed, Error, Cancelled) adds to the batch's counters
in the same transaction, after the batch's row lock; the change that brings them up to the total of a closed
batch records its completion and enqueues its completion message there too. So however many workers race, and
whenever one dies, the completion is enqueued once: by the one transaction that committed it.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import transaction
from django.db.models import QuerySet
from django.dispatch import receiver
from django.utils import timezone
from pydantic import ValidationError

from . import quarantine
from .backends import EnqueueRow, backend_for
from .exceptions import InvalidArgument, NotRegistered
from .models.batches import Batch
from .registry import registry
from .serialization import canonical_json, json_hash
from .status import Status

if TYPE_CHECKING:
    from .models import QueueItem

logger = logging.getLogger("nexus_queues")

BATCH_HEADER = "nexus_batch"
"""The header in which a member names its batch's id."""

CHUNK = 10_000
"""Rows locked per statement where a merge replaces many (SQLite binds at most 32,766 values)."""

FINISHED = {Status.PROCESSED.value: "processed", Status.ERROR.value: "error", Status.CANCELLED.value: "cancelled"}
"""The finished statuses, and the batch counter each one adds to."""

T = TypeVar("T")

_open: ContextVar[Batch | None] = ContextVar("nexus_batch", default=None)

Move = tuple[int, str | None, str | None]
"""A member's batch id, its status before (None: it joins) and after (None: it leaves)."""


def current() -> Batch | None:
    """The batch that messages enqueued now join (the innermost ``with batch(...)``), or None."""
    return _open.get()


@contextmanager
def opened(batch: Batch) -> Iterator[Batch]:
    """Make ``batch`` the one that messages enqueued in the block join."""
    token = _open.set(batch)
    try:
        yield batch
    finally:
        _open.reset(token)


def headers_for(batch: Batch | None, queue: str, headers: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``headers`` with ``batch``'s id added; :class:`InvalidArgument` for a batch of another queue or a
    header that claims a batch."""
    if headers is not None and isinstance(headers, Mapping) and BATCH_HEADER in headers:
        raise InvalidArgument(f"The header {BATCH_HEADER!r} is reserved: enqueue inside `with batch(...)` instead.")
    if batch is None:
        return headers
    if batch.queue != queue:
        raise InvalidArgument(
            f"Batch {batch.pk} groups messages of queue {batch.queue!r}; a message of {queue!r} cannot join it."
        )
    return {**(headers or {}), BATCH_HEADER: batch.pk}


def batch_of(headers: Any) -> int | None:
    """The id of the batch that a row's headers name, or None."""
    if not isinstance(headers, dict):
        return None
    found = headers.get(BATCH_HEADER)
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def members(items: Iterable[QueueItem]) -> bool:
    """Is any of ``items`` a batch's member?"""
    return any(batch_of(item.headers) is not None for item in items)


def finished(
    alias: str, items: Sequence[QueueItem], changed: Sequence[int], before: str, after: str, now: datetime
) -> None:
    """Count the members among ``items`` whose rows ``changed`` from ``before`` to ``after``."""
    ids = set(changed)
    moves = [(batch, before, after) for item in items if item.pk in ids and (batch := batch_of(item.headers))]
    record(alias, moves, now)


def joined(alias: str, batch: Batch, count: int, status: str | None, now: datetime) -> None:
    """``count`` new members of ``batch`` stored in ``status`` (None: the queue's default, not finished)."""
    delta: Counter[str] = Counter(total=count)
    if status in FINISHED:
        delta[FINISHED[status]] += count
    apply(alias, {batch.pk: delta}, now)


def record(alias: str, moves: Iterable[Move], now: datetime) -> None:
    """Add ``moves`` to their batches' counters (in the caller's transaction, which changed the rows)."""
    deltas: dict[int, Counter[str]] = defaultdict(Counter)
    for batch, before, after in moves:
        delta = deltas[batch]
        if before is None:
            delta["total"] += 1
        elif before in FINISHED:
            delta[FINISHED[before]] -= 1
        if after is None:
            delta["total"] -= 1
        elif after in FINISHED:
            delta[FINISHED[after]] += 1
    apply(alias, deltas, now)


def apply(alias: str, deltas: Mapping[int, Counter[str]], now: datetime) -> None:
    """Add ``deltas`` to their batches' counters, locking the rows in id order; complete the batches they finish."""
    for batch_id in sorted(deltas):
        delta = {name: n for name, n in deltas[batch_id].items() if n}
        if not delta:
            continue
        batch = Batch.objects.using(alias).select_for_update().filter(pk=batch_id).first()
        if batch is None:  # deleted by an operator: its members count for nothing
            continue
        for name, n in delta.items():
            setattr(batch, name, getattr(batch, name) + n)
        batch.save(using=alias, update_fields=[*delta, *_completed(alias, batch, now)])


def close(alias: str, batch: Batch, now: datetime) -> None:
    """``batch`` takes no more members; complete it if every member has finished already."""
    batch = Batch.objects.using(alias).select_for_update().get(pk=batch.pk)
    batch.closed_at = now
    batch.save(using=alias, update_fields=["closed_at", *_completed(alias, batch, now)])


def replaced(alias: str, model: type[QueueItem], message_ids: Sequence[str | None]) -> dict[str, tuple[int, str]]:
    """By message id, the batch and status of the stored rows of ``message_ids`` that are a batch's members,
    locked: an upsert that replaces them takes them out of their batch."""
    rows = model.objects.using(alias).select_for_update().filter(headers__has_key=BATCH_HEADER)
    found: dict[str, tuple[int, str]] = {}
    for start in range(0, len(message_ids), 1000):
        chunk = rows.filter(message_id__in=message_ids[start : start + 1000]).order_by("pk")
        for message_id, headers, status in chunk.values_list("message_id", "headers", "status"):
            batch = batch_of(headers)
            if batch is not None and message_id is not None:
                found[message_id] = (batch, status)
    return found


def moving(
    rows: QuerySet[Any], after: str, write: Callable[[], T], *, unchanged: Iterable[str], now: datetime | None = None
) -> T:
    """``write()``, which moves ``rows`` to ``after``, counting the batch members among them (but those in an
    ``unchanged`` status) in one transaction, their rows locked first. A delete moves its unfinished members to
    Cancelled (they will never run): a batch whose member an operator deleted still completes."""
    alias = rows.db
    queue = rows.model.message_class.queue_name()
    if not Batch.objects.using(alias).filter(queue=queue).exists():
        return write()
    with transaction.atomic(using=alias):
        backend_for(alias).take_write_lock()
        found = rows.filter(headers__has_key=BATCH_HEADER).exclude(status__in=unchanged).select_for_update()
        moves = [
            (batch, status, after)
            for headers, status in found.order_by("pk").values_list("headers", "status")
            if (batch := batch_of(headers)) is not None
        ]
        done = write()
        record(alias, moves, now or timezone.now())
    return done


@receiver(quarantine.quarantined, dispatch_uid="nexus_queues.membership.quarantined")
def _quarantined(sender: Any, *, alias: str, headers: Any, status: str, now: datetime, **_: Any) -> None:
    """A member set to Error because Python cannot read it counts Error, as a failed run would."""
    batch = batch_of(headers)
    if batch is not None:
        record(alias, [(batch, status, Status.ERROR.value)], now)


def replaced_by_merge(
    alias: str, model: type[QueueItem], queue: str, staged: QuerySet[Any], replaced: Callable[[], Sequence[int]] | None
) -> list[Move]:
    """The members of open batches that a merge of the ``staged`` rows replaces (locked), as moves out of their
    batch: a Spark sync that changes a message still waiting in an earlier sync's batch takes it out of that one.

    ``replaced``: on an idempotent queue, what gives the ids of the stored rows for which a staged message has other
    JSON (:meth:`~nexus_queues.backends.base.Backend.staged_with_other_json`, asked only when a batch is open; only
    those rows are locked, and only those whose newest staged JSON differs move); None on a queue that stores every
    staged message again.
    Batches already complete keep their final counts: only the open batches of the queue are looked up, so a
    sync of rows whose batches completed reads no more rows than without batches.
    """
    open_ids = set(
        Batch.objects.using(alias).filter(queue=queue, completed_at__isnull=True).values_list("pk", flat=True)
    )
    if not open_ids:
        return []
    staged, stored = staged.filter(reject__isnull=True), model.objects.using(alias)
    if replaced is None:
        members = _locked_members(stored.filter(message_id__in=staged.values("message_id")), open_ids)
        return [(batch, status, None) for _, batch, status, _ in members]
    moves: list[Move] = []
    ids = replaced()
    for start in range(0, len(ids), CHUNK):  # ascending ids, as every locker of many rows takes them
        members = _locked_members(stored.filter(pk__in=ids[start : start + CHUNK]), open_ids)
        newest = dict(
            staged.filter(message_id__in=[member[0] for member in members])
            .order_by("position")
            .values_list("message_id", "message_hash")
        )  # the last staged of an id wins
        moves += [(batch, status, None) for message_id, batch, status, hash_ in members if newest[message_id] != hash_]
    return moves


def _locked_members(rows: QuerySet[Any], open_ids: set[int]) -> list[tuple[str, int, str, str]]:
    """The message id, batch, status and hash of the ``rows`` (locked) that are members of an open batch."""
    locked = rows.filter(headers__has_key=BATCH_HEADER).select_for_update().order_by("pk")
    return [
        (message_id, batch, status, hash_)
        for message_id, headers, status, hash_ in locked.values_list("message_id", "headers", "status", "message_hash")
        if (batch := batch_of(headers)) in open_ids
    ]


def merged(alias: str, batch: Batch, written: int, finished: Mapping[str, int], now: datetime) -> None:
    """``written`` messages joined ``batch`` in a merge, ``finished`` of them by status stored finished; close it."""
    delta: Counter[str] = Counter(total=written)
    for status, count in finished.items():
        delta[FINISHED[status]] += count
    apply(alias, {batch.pk: delta}, now)
    close(alias, batch, now)


def _completed(alias: str, batch: Batch, now: datetime) -> list[str]:
    """Complete ``batch`` when it is closed and every member has finished: the fields that changed."""
    if batch.completed_at is not None or batch.closed_at is None or batch.finished < batch.total:
        return []
    batch.completed_at = now
    if batch.completion_queue:
        _enqueue_completion(alias, batch, now)
    logger.info(
        "Batch %s of %s completed: %s processed, %s error, %s cancelled of %s.", batch.pk, batch.queue,
        batch.processed, batch.error, batch.cancelled, batch.total, extra={"action": "batch_completed"},
    )
    return ["completed_at"]


def _enqueue_completion(alias: str, batch: Batch, now: datetime) -> None:
    """Store the batch's completion message, its ``batch`` field filled, in the transaction that completed it."""
    try:
        message_class = registry.resolve(batch.completion_queue)
        message = message_class.model_validate({**(batch.completion_message or {}), "batch": batch.counts()})
    except (NotRegistered, ValidationError) as exc:
        # Refusing would roll back the member's own change, and make it fail for ever: the batch completes.
        logger.error(
            "Batch %s completed, but its completion message for %s cannot be made: %s", batch.pk,
            batch.completion_queue, exc, extra={"action": "batch_completion_failed"},
        )
        return
    text = canonical_json(message)
    row = EnqueueRow(batch.completion_message_id, text, json_hash(text), "{}", None, None, None, now, now)
    backend = backend_for(alias)
    model = message_class.queue_model
    if message_class.has_identity:
        backend.upsert(model, [row], idempotent=message_class.queue_options.idempotent, notify=True)
    else:
        backend.insert_one(model, row, notify=True)
