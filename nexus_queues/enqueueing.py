"""Putting messages in their queue: one at a time or many in one batched statement."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from . import batches, cycle_collector, membership, signals
from .backends import Backend, EnqueueRow, backend_for
from .conf import settings
from .exceptions import InvalidArgument, InvalidMessage, UnstorableValue
from .limits import after, check_datetime
from .messages import QueueMessage, message_id_of
from .models.batches import Batch
from .retries import retried
from .serialization import canonical_json, json_hash
from .start_requests import needs_request, request_start
from .status import Status, validate_settable_status


@dataclass(frozen=True)
class EnqueueResult:
    """What an enqueue call did with each message it was given."""

    stored: tuple[QueueMessage, ...] = ()
    """Messages now stored (new rows, or new versions that replaced a stored one)."""
    discarded: tuple[QueueMessage, ...] = ()
    """Idempotent duplicates: the stored message already had this id and JSON."""
    superseded: tuple[QueueMessage, ...] = ()
    """Earlier versions of an id that a later message in the same call replaced."""
    ids: tuple[int, ...] | None = None
    """The ids of the rows holding ``stored``, in its order; None unless asked for with ``return_ids=True``."""
    batch: int | None = None
    """The id of the :class:`~nexus_queues.models.Batch` that ``enqueue_many(..., batch=...)`` made."""


@dataclass(frozen=True)
class Placement:
    """Where a message goes: its status, schedule, expiry and headers (JSON), as enqueue's options say."""

    status: str | None
    process_at: datetime | None
    expires_at: datetime | None
    headers: str


def enqueue(
    message: QueueMessage,
    *,
    at: datetime | None = None,
    delay: timedelta | None = None,
    status: str | None = None,
    expires_at: datetime | None = None,
    headers: Mapping[str, Any] | None = None,
    start_processing: bool = False,
    return_ids: bool = False,
) -> EnqueueResult:
    """Store one message: Pending (or the queue's default status, or ``status``), or Sleeping
    until ``at`` / now + ``delay``. ``start_processing`` wakes idle workers where the engine can;
    ``return_ids`` fills :attr:`EnqueueResult.ids` (one more query for queues with identity)."""
    message_class = _message_class([message])
    joining = membership.current()
    headers = membership.headers_for(joining, message_class.queue_name(), headers)
    placement = resolve_placement(at, delay, status, expires_at, headers)
    now = timezone.now()
    row = enqueue_row(message, placement, now)
    backend = backend_for(message_class.queue_options.database)
    backend.budget().check([row])
    notify = start_processing or settings.NOTIFY
    idempotent = message_class.queue_options.idempotent
    model = message_class.queue_model

    def store() -> EnqueueResult:
        with transaction.atomic(using=backend.alias) if return_ids else nullcontext():
            left = membership.replaced(backend.alias, model, [row.message_id]) if joining else {}
            stored = backend.upsert(model, [row], idempotent=idempotent, notify=notify)
            _join(backend, message_class, joining, [row], stored, left, now)
            result = EnqueueResult(stored=(message,)) if stored else EnqueueResult(discarded=(message,))
            return _with_ids(message_class, result) if return_ids else result

    _start(message_class, start_processing)
    if message_class.has_identity:
        result = retried(backend.alias, store)
    else:
        row_id = backend.insert_one(model, row, notify=notify)
        _join(backend, message_class, joining, [row], None, {}, now)
        result = EnqueueResult(stored=(message,), ids=(row_id,) if return_ids else None)
    signals.send(signals.enqueued, message_class, backend.alias, result=result)
    return result


def enqueue_many(
    messages: Iterable[QueueMessage],
    *,
    at: datetime | None = None,
    delay: timedelta | None = None,
    status: str | None = None,
    expires_at: datetime | None = None,
    headers: Mapping[str, Any] | None = None,
    start_processing: bool = False,
    return_ids: bool = False,
    batch: str | None = None,
    on_complete: QueueMessage | None = None,
) -> EnqueueResult:
    """Store messages of one queue in one transaction, batched (COPY on PostgreSQL).

    All or nothing: a bad message raises and nothing is stored, and so does one larger than the database takes in
    a statement (:class:`MessageTooLarge`); the rest go in statements within that. On PostgreSQL the COPY streams:
    the database stores the first rows while the rest are serialized.
    ``return_ids`` fills :attr:`EnqueueResult.ids` (one more query per batch on PostgreSQL and for queues
    with identity). ``batch`` (a label) makes the messages stored a :class:`~nexus_queues.models.Batch`, whose
    ``on_complete`` message is enqueued once all of them have finished (see :func:`nexus_queues.batch`).
    """
    messages = list(messages)
    if batch is not None or on_complete is not None:
        return _enqueue_batch(messages, batch, on_complete, at=at, delay=delay, status=status, expires_at=expires_at,
                              headers=headers, start_processing=start_processing, return_ids=return_ids)
    if not messages:
        return EnqueueResult()
    message_class = _message_class(messages)
    joining = membership.current()
    headers = membership.headers_for(joining, message_class.queue_name(), headers)
    placement = resolve_placement(at, delay, status, expires_at, headers)
    backend = backend_for(message_class.queue_options.database)
    with cycle_collector.held():  # a row per message, none in a cycle: their reference counts free them
        result = _store_many(backend, message_class, messages, placement, joining, start_processing, return_ids)
    signals.send(signals.enqueued, message_class, backend.alias, result=result)
    return result


def _store_many(
    backend: Backend,
    message_class: type[QueueMessage],
    messages: list[QueueMessage],
    placement: Placement,
    joining: Batch | None,
    start_processing: bool,
    return_ids: bool,
) -> EnqueueResult:
    """:func:`enqueue_many`'s rows, made and stored in one transaction."""
    now = timezone.now()
    rows = _Rows(messages, placement, now)
    if start_processing:
        rows.make_all()  # a message that cannot be stored raises before the job's start request is stored
    backend.budget().check(rows)
    notify = start_processing or settings.NOTIFY

    def store() -> EnqueueResult:
        with transaction.atomic(using=backend.alias):
            default = None
            if placement.status is None:
                backend.take_write_lock()  # before reading: SQLite fails a read lock's upgrade at once
                default = backend.default_status(message_class.queue_model)
            if not message_class.has_identity:
                ids = backend.insert_many(
                    message_class.queue_model, rows, default_status=default, notify=notify, return_ids=return_ids
                )
                _join(backend, message_class, joining, rows, None, {}, now, default)
                return EnqueueResult(stored=tuple(messages), ids=ids)
            placed = rows if default is None else [row._replace(status=default) for row in rows]
            result = _upsert_many(backend, message_class, messages, placed, notify, joining, now)
            return _with_ids(message_class, result) if return_ids else result

    _start(message_class, start_processing)
    return retried(backend.alias, store)


def check_size(message: QueueMessage) -> None:
    """Raise what enqueue would for ``message`` alone: :class:`UnstorableValue` for a value not every engine
    stores, :class:`MessageTooLarge` when it is larger than its queue's database takes in one statement."""
    row = enqueue_row(message, resolve_placement(None, None, None, None, None), timezone.now())
    backend_for(type(message).queue_options.database).budget().check([row])


def _start(message_class: type[QueueMessage], start_processing: bool) -> None:
    """A scheduled job's start request, stored for the workers before the message, so that the message's wake-up
    finds it (none for a switched-off job); a job without a schedule is woken by the notify alone."""
    if start_processing and needs_request(message_class):
        request_start(message_class)


def _upsert_many(
    backend: Backend,
    message_class: type[QueueMessage],
    messages: list[QueueMessage],
    rows: Sequence[EnqueueRow],
    notify: bool,
    joining: Batch | None,
    now: datetime,
) -> EnqueueResult:
    idempotent = message_class.queue_options.idempotent
    last: dict[str | None, int] = {row.message_id: i for i, row in enumerate(rows)}
    earlier = [i for i, row in enumerate(rows) if last[row.message_id] != i]
    finals = sorted(last.values())
    finals_rows = [rows[i] for i in finals]
    model = message_class.queue_model
    left = membership.replaced(backend.alias, model, [row.message_id for row in finals_rows]) if joining else {}
    stored_ids = backend.upsert(model, finals_rows, idempotent=idempotent, notify=notify)
    _join(backend, message_class, joining, finals_rows, stored_ids, left, now)
    repeated = {
        i for i in earlier if idempotent and rows[i].message_hash == rows[last[rows[i].message_id]].message_hash
    }
    stored = [i for i in finals if rows[i].message_id in stored_ids]
    return EnqueueResult(
        stored=tuple(messages[i] for i in stored),
        discarded=tuple(messages[i] for i in sorted({*repeated, *(set(finals) - set(stored))})),
        superseded=tuple(messages[i] for i in earlier if i not in repeated),
    )


def _enqueue_batch(
    messages: list[QueueMessage], label: str | None, on_complete: QueueMessage | None, **options: Any
) -> EnqueueResult:
    """``enqueue_many`` of ``messages`` as a new batch labelled ``label``."""
    if label is None:
        raise InvalidArgument("on_complete belongs to a batch: give enqueue_many(..., batch='a label') too.")
    if not messages:
        raise InvalidArgument("A batch of enqueue_many needs messages, to know their queue: got none.")
    with batches.batch(_message_class(messages), label=label, on_complete=on_complete) as made:
        result = enqueue_many(messages, **options)
    return replace(result, batch=made.pk)


def _join(
    backend: Backend,
    message_class: type[QueueMessage],
    joining: Batch | None,
    rows: Sequence[EnqueueRow],
    stored: set[str] | None,
    left: dict[str, tuple[int, str]],
    now: datetime,
    default: str | None = None,
) -> None:
    """Count the ``rows`` stored (all when ``stored`` is None, else those whose message id is in it) into the
    batch they join, and the stored rows they replaced (``left``) out of theirs."""
    if joining is None:
        return
    status = rows[0].status or default
    if status is None:
        status = backend.default_status(message_class.queue_model)
    count = len(rows) if stored is None else len(stored)
    moves = [(batch, before, None) for message_id, (batch, before) in left.items() if message_id in (stored or ())]
    membership.record(backend.alias, moves, now)
    membership.joined(backend.alias, joining, count, status, now)


def _with_ids(message_class: type[QueueMessage], result: EnqueueResult) -> EnqueueResult:
    """``result`` with the ids of the rows holding its stored messages, read in the caller's transaction."""
    wanted = [message_id_of(message) for message in result.stored]
    rows = message_class.queue_items()
    found: dict[str | None, int] = {}
    for start in range(0, len(wanted), 1000):
        found.update(rows.filter(message_id__in=wanted[start : start + 1000]).values_list("message_id", "id"))
    return replace(result, ids=tuple(found[message_id] for message_id in wanted))


def _message_class(messages: list[QueueMessage]) -> type[QueueMessage]:
    first = messages[0]
    if not isinstance(first, QueueMessage) or not hasattr(type(first), "queue_model"):
        raise InvalidMessage(f"Only instances of a queue's message class can be enqueued, not {type(first).__name__}.")
    message_class = type(first)
    for other in messages:
        if type(other) is not message_class:
            raise InvalidMessage(
                f"enqueue_many takes messages of one queue: got {message_class.__qualname__} "
                f"and {type(other).__qualname__}."
            )
    return message_class


def resolve_placement(
    at: datetime | None,
    delay: timedelta | None,
    status: str | None,
    expires_at: datetime | None,
    headers: Mapping[str, Any] | None,
) -> Placement:
    """Enqueue's options checked (:class:`InvalidArgument`, :class:`InvalidStatus`) and resolved."""
    if at is not None and delay is not None:
        raise InvalidArgument("Give at or delay, not both.")
    if delay is not None:
        if not isinstance(delay, timedelta) or delay < timedelta(0):
            raise InvalidArgument(f"delay must be a non-negative timedelta, got {delay!r}.")
        at = after(timezone.now(), delay)
    for name, value in (("at", at), ("expires_at", expires_at)):
        _check_datetime(name, value)
    if at is not None and status is not None:
        raise InvalidArgument("A scheduled message is Sleeping until its time: give status or at/delay, not both.")
    if status is not None:
        status = validate_settable_status(status)
    if headers is not None and not isinstance(headers, Mapping):
        raise InvalidArgument(f"headers must be a mapping, got {type(headers).__name__}.")
    try:
        headers_json = canonical_json(dict(headers or {}), "headers")
    except TypeError as exc:
        raise InvalidArgument(f"headers must be JSON-serializable: {exc}") from exc
    return Placement(
        status=Status.SLEEPING if at is not None else status, process_at=at, expires_at=expires_at, headers=headers_json
    )


def _check_datetime(name: str, value: datetime | None) -> None:
    if value is None:
        return
    if not isinstance(value, datetime):
        raise InvalidArgument(f"{name} must be a datetime, got {type(value).__name__}.")
    if django_settings.USE_TZ and timezone.is_naive(value):
        raise InvalidArgument(f"{name} must be timezone-aware (USE_TZ is on).")
    check_datetime(name, value)


class _Rows(Sequence[EnqueueRow]):
    """The rows of ``messages``, each made when first read and then kept.

    A backend that streams its rows (PostgreSQL's COPY) sends the first while the rest are still being made, so
    the database works on a batch while Python serializes it, rather than after.
    """

    def __init__(self, messages: list[QueueMessage], placement: Placement, now: datetime) -> None:
        self._messages, self._placement, self._now = messages, placement, now
        self._made: list[EnqueueRow] = []

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        self._make(index + 1)
        return self._made[index]

    def __iter__(self) -> Iterator[EnqueueRow]:
        for index in range(len(self)):
            if index == len(self._made):
                self._make(index + 1)
            yield self._made[index]

    def make_all(self) -> None:
        """Make every row now: :class:`UnstorableValue` for the first message that cannot be stored."""
        self._make(len(self))

    def _make(self, count: int) -> None:
        made, placement, now = self._made, self._placement, self._now
        for index in range(len(made), min(count, len(self))):
            try:
                made.append(enqueue_row(self._messages[index], placement, now))
            except UnstorableValue as exc:
                raise UnstorableValue(exc.field, exc.problem, index) from exc


def enqueue_row(message: QueueMessage, placement: Placement, now: datetime) -> EnqueueRow:
    """The row enqueue writes for ``message``; :class:`UnstorableValue` when not every engine can store it."""
    text = canonical_json(message)
    # Positional: this runs once per message of a batch, and keywords cost more than the rest.
    return EnqueueRow(
        message_id_of(message),
        text,
        json_hash(text),
        placement.headers,
        placement.status,
        placement.process_at,
        placement.expires_at,
        now,
        now,
    )
