"""Batch membership: a message names its batch in its headers, and the batch's counters move with its members.

Every change of a member to or from a finished status (Processed, Error, Cancelled) adds to the batch's counters
in the same transaction, after the batch's row lock; the change that brings them up to the total of a closed
batch records its completion and enqueues its completion message there too. So however many workers race, and
whenever one dies, the completion is enqueued once: by the one transaction that committed it. Every ORM writer of
a status comes here (the queue rows' ``QuerySet.update`` and ``delete``); what goes around Django (raw SQL) is
healed by :func:`recount`, which housekeeping runs on batches whose counters stopped moving.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Count, Exists, Q, QuerySet
from django.utils import timezone
from pydantic import ValidationError

from .backends import EnqueueRow, backend_for
from .backends.session import chunks
from .exceptions import InvalidArgument, NotRegistered
from .models.batches import Batch
from .registry import registry
from .serialization import canonical_json, json_hash
from .status import Status

if TYPE_CHECKING:
    from .messages import QueueMessage
    from .models import QueueItem

logger = logging.getLogger("nexus_queues")

BATCH_HEADER = "nexus_batch"
"""The header in which a member names its batch's id."""

CHUNK = 10_000
"""Rows locked per statement where a merge replaces many (SQLite binds at most 32,766 values)."""

FINISHED = {Status.PROCESSED.value: "processed", Status.ERROR.value: "error", Status.CANCELLED.value: "cancelled"}
"""The finished statuses, and the batch counter each one adds to."""

RECOUNT_AFTER = timedelta(minutes=5)
"""How long the counters of a batch not complete stay still before housekeeping recounts them from its rows."""

RECOUNTS = 10
"""The most batches of a queue one housekeeping pass recounts: each recount reads the queue's table once."""

WAITING_AGAIN = (Status.ERROR.value, Status.CANCELLED.value, Status.PROCESSED.value)
"""The finished statuses a recount takes rows found waiting again out of, first to last."""

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
            # Below none only when a change went uncounted (raw SQL): the recount puts it right.
            setattr(batch, name, max(getattr(batch, name) + n, 0))
        batch.counted_at = now
        batch.save(using=alias, update_fields=[*delta, "counted_at", *_completed(alias, batch, now)])


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


def updating(rows: QuerySet[Any], values: dict[str, Any]) -> int:
    """``rows.update(**values)``, ``values`` setting a status: the members it moves count in their batches."""
    status = values["status"]
    write = partial(QuerySet.update, **values)
    if not isinstance(status, str):  # an expression (``bulk_update``'s ``Case``): each row's move is read after it
        return moving(rows, write, after=None)
    if status in FINISHED:
        return moving(rows, write, after=lambda before: status)
    # To a status not finished, only the finished members' moves count: the others are written in one statement.
    return moving(rows, write, after=lambda before: status, counted=Q(status__in=FINISHED))


def deleting(rows: QuerySet[Any]) -> int:
    """Delete ``rows``: their members not finished count Cancelled (they will never run), so that their batches still
    complete; a finished one keeps counting as it finished."""
    return moving(rows, _deleted, after=_cancelled)


def _deleted(rows: QuerySet[Any]) -> int:
    return QuerySet.delete(rows)[0]


def _cancelled(before: str) -> str:
    return before if before in FINISHED else Status.CANCELLED.value


def moving(
    rows: QuerySet[Any], write: Callable[[QuerySet[Any]], int], *, after: Callable[[str], str] | None,
    counted: Q | None = None,
) -> int:
    """``write`` on ``rows`` (an update or a delete, giving the count), counting in one transaction the moves of the
    batch members among them (those in a ``counted`` status; None: all): from there to ``after`` their status before
    (None: to the status the write gave each).

    It writes in two parts: first every row but those members, then those members, locked in id order and written
    by id, their moves counted from the status each holds once locked. A row that becomes such a member in between
    (it joined a batch, or another writer moved it) is written in the second part; one that another writer moved
    out of the ``counted`` statuses while this one waited for its lock is left as that writer left it. So a move
    counts once, in the transaction that made it, however writers race. A queue that has no batch costs one more
    statement, which finds no member.
    """
    alias = rows.db
    members = Q(headers__has_key=BATCH_HEADER) & (counted or Q()) & Exists(_batches(alias, rows.model))
    with transaction.atomic(using=alias, savepoint=False):  # a caller's transaction makes no savepoint for it
        done = write(rows.exclude(members))  # on SQLite, this write takes the write lock
        locked = rows.filter(members).select_for_update().order_by("pk").values_list("pk", "headers", "status")
        before = {pk: (batch, status) for pk, headers, status in locked if (batch := batch_of(headers)) is not None}
        stored, moves = rows.model._base_manager.using(alias), []
        for ids in chunks(sorted(before), CHUNK):
            done += write(stored.filter(pk__in=ids))
            written = {} if after else dict(stored.filter(pk__in=ids).values_list("pk", "status"))
            moves += [(before[pk][0], before[pk][1], after(before[pk][1]) if after else written[pk]) for pk in ids]
        record(alias, moves, timezone.now())
    return done


def _batches(alias: str, model: type[QueueItem]) -> QuerySet[Batch]:
    return Batch.objects.using(alias).filter(queue=model.message_class.queue_name())


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


def recount(message_class: type[QueueMessage], now: datetime) -> int:
    """Recount from their members' rows the queue's batches not complete whose counters stayed still for
    :data:`RECOUNT_AFTER` (at most :data:`RECOUNTS`, the stillest first), completing those found finished; how many
    messages' counting changed (none while every writer went through Django)."""
    alias = message_class.queue_options.database
    still = _batches(alias, message_class.queue_model).filter(
        completed_at__isnull=True, counted_at__lte=now - RECOUNT_AFTER
    )
    ids = list(still.order_by("counted_at").values_list("pk", flat=True)[:RECOUNTS])
    return sum(_recount(alias, message_class.queue_model, still.filter(pk=pk), now) for pk in ids)


def _recount(alias: str, model: type[QueueItem], still: QuerySet[Batch], now: datetime) -> int:
    """Recount the batch ``still`` holds (if still so) in one transaction that holds its row lock from first to
    last, so that a move counted meanwhile waits for it and then adds to the recounted counters."""
    with backend_for(alias).write_transaction():
        batch = still.select_for_update().first()
        if batch is None:  # counted or completed meanwhile
            return 0
        rows = model.objects.using(alias).filter(headers__nexus_batch=batch.pk).order_by().values_list("status")
        before = batch.counts()
        changed = _heal(batch, dict(rows.annotate(n=Count("pk"))))
        batch.counted_at = now
        counters = ["total", *FINISHED.values(), "counted_at"]
        batch.save(using=alias, update_fields=[*counters, *_completed(alias, batch, now)])
    if changed:
        logger.warning(
            "Batch %s of %s recounted from its rows (a change went around Django, as raw SQL does): %s, now %s.",
            batch.pk, batch.queue, _figures(before), _figures(batch.counts()), extra={"action": "batch_recounted"},
        )
    return changed


def _heal(batch: Batch, found: Mapping[str, int]) -> int:
    """Set ``batch``'s counters from its members' rows by status (``found``): each finished count at least its rows,
    and as many pending as rows not finished; how many messages' counting changed. A finished count above its rows
    may count deleted rows, and is lowered only for rows found waiting again."""
    changed = 0
    for status, name in FINISHED.items():
        missed = found.get(status, 0) - getattr(batch, name)
        if missed > 0:
            setattr(batch, name, found[status])
            changed += missed
    surplus = sum(n for status, n in found.items() if status not in FINISHED) - (batch.total - batch.finished)
    changed += abs(surplus)
    if surplus < 0:  # counted waiting, but gone without a counted end (deleted by raw SQL): as a delete counts them
        batch.cancelled -= surplus
    for status in WAITING_AGAIN:  # rows waiting again, counted finished (an Error retried by raw SQL, most often)
        name = FINISHED[status]
        back = min(surplus, getattr(batch, name) - found.get(status, 0))
        if back > 0:
            setattr(batch, name, getattr(batch, name) - back)
            surplus -= back
    batch.total += max(surplus, 0)  # rows waiting that it never counted: their header written by hand
    return changed


def _figures(counts: Mapping[str, Any]) -> str:
    return ", ".join(f"{counts[name]} {name}" for name in ("total", "pending", *FINISHED.values()))


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
