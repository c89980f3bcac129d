"""Status changes: fenced completions by the lease holder, and operators' bulk changes."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.core.exceptions import FieldError, ValidationError
from django.utils import timezone

from . import signals
from .engines import Engine, engine_for
from .exceptions import InvalidArgument, InvalidLookup, InvalidMessage
from .failures import describe as _describe
from .limits import check_datetime
from .registry import registry
from .retries import retried
from .status import Status, validate_settable_status

if TYPE_CHECKING:
    from .messages import QueueMessage
    from .models import QueueItem

logger = logging.getLogger("nexus_queues")

_CLEAR_LEASE = "lease_expires_at = NULL"
_CLEAR_ERROR = "error_type = '', error_message = '', error_traceback = ''"


def mark_processed(items: Iterable[QueueItem], *, now: datetime | None = None) -> list[int]:
    """Processed (the message becomes the previous version), or deleted when the queue keeps
    no processed messages. Only rows still leased by their item's lease change; returns their ids."""
    now = now or timezone.now()

    def complete(engine: Engine, model: type[QueueItem], correlation_id: str, batch: list[QueueItem]) -> list[int]:
        ids = [item.pk for item in batch]
        if not model.message_class.queue_options.keeps_processed:
            return engine.delete_leased(model, ids, correlation_id)
        changed = engine.update_leased(
            model,
            ids,
            correlation_id,
            f"status = %s, previous_message = message, processed_at = %s, updated_at = %s, "
            f"{_CLEAR_LEASE}, {_CLEAR_ERROR}",
            [Status.PROCESSED, engine.adapt(now), engine.adapt(now)],
        )
        _apply(batch, changed, status=Status.PROCESSED, processed_at=now, updated_at=now, lease_expires_at=None)
        return changed

    items = list(items)
    changed = _per_lease(items, "processed", complete)
    signals.send_items(signals.processed, items, changed)
    return changed


def mark_error(items: Iterable[QueueItem], exc: BaseException, *, now: datetime | None = None) -> list[int]:
    """Error, keeping the exception's type, message and traceback."""
    now = now or timezone.now()
    error = _describe(exc)
    items = list(items)
    changed = _fenced(
        items,
        "error",
        f"status = %s, error_type = %s, error_message = %s, error_traceback = %s, updated_at = %s, {_CLEAR_LEASE}",
        lambda e: [Status.ERROR, *error, e.adapt(now)],
        status=Status.ERROR,
        error_type=error[0],
        error_message=error[1],
        error_traceback=error[2],
        updated_at=now,
        lease_expires_at=None,
    )
    signals.send_items(signals.failed, items, changed, exc=exc)
    return changed


def reschedule(
    items: Iterable[QueueItem], at: datetime, *, now: datetime | None = None, reset_attempts: bool = False
) -> list[int]:
    """Sleeping until ``at``; the dispatch loop makes them Pending then.

    ``reset_attempts`` starts the attempt count afresh (a job asked to run again later after a success).
    """
    _check_at("reschedule", at)
    now = now or timezone.now()
    attempts = ", attempts = 0" if reset_attempts else ""
    return _fenced(
        items,
        "rescheduled",
        f"status = %s, process_at = %s, updated_at = %s, {_CLEAR_LEASE}{attempts}",
        lambda e: [Status.SLEEPING, e.adapt(at), e.adapt(now)],
        status=Status.SLEEPING,
        process_at=at,
        updated_at=now,
        lease_expires_at=None,
        **({"attempts": 0} if reset_attempts else {}),
    )


def retry_later(
    items: Iterable[QueueItem], exc: BaseException, at: datetime, *, now: datetime | None = None
) -> list[int]:
    """Sleeping until ``at`` for another attempt, keeping the exception that failed this one."""
    _check_at("retry_later", at)
    now = now or timezone.now()
    error = _describe(exc)
    return _fenced(
        items,
        "retried",
        f"status = %s, process_at = %s, error_type = %s, error_message = %s, error_traceback = %s, updated_at = %s, "
        f"{_CLEAR_LEASE}",
        lambda e: [Status.SLEEPING, e.adapt(at), *error, e.adapt(now)],
        status=Status.SLEEPING,
        process_at=at,
        error_type=error[0],
        error_message=error[1],
        error_traceback=error[2],
        updated_at=now,
        lease_expires_at=None,
    )


def renew_leases(items: Iterable[QueueItem], until: datetime, *, now: datetime | None = None) -> list[int]:
    """Extend the leases still held by their item's lease to ``until`` (a running job's heartbeat)."""
    now = now or timezone.now()
    return _fenced(
        items,
        "renewed",
        "lease_expires_at = %s, updated_at = %s",
        lambda e: [e.adapt(until), e.adapt(now)],
        lease_expires_at=until,
        updated_at=now,
    )


def set_status(items: Iterable[QueueItem], status: str, *, now: datetime | None = None) -> list[int]:
    """Any status but Leased and Sleeping (a custom status hides the rows from workers)."""
    status = validate_settable_status(status)
    now = now or timezone.now()
    return _fenced(
        items,
        f"set {status}",
        f"status = %s, updated_at = %s, {_CLEAR_LEASE}",
        lambda e: [status, e.adapt(now)],
        status=status,
        updated_at=now,
        lease_expires_at=None,
    )


def update_status(queue: type[QueueMessage] | str, status: str, /, **lookups: Any) -> int:
    """Set ``status`` on every message of the queue matching Django lookups, in one transaction.

    ``update_status(ProductUpdated, "Pending", message__sku="123")``; returns the count changed.
    A Leased row loses its lease (its worker's completion then changes nothing).
    """
    message_class = registry.resolve(queue)
    status = validate_settable_status(status)
    engine = engine_for(message_class.queue_options.database)
    values = {"status": status, "lease_expires_at": None, "updated_at": timezone.now()}
    try:
        matching = message_class.queue_model.objects.using(engine.alias).filter(**lookups)
        return retried(engine.alias, lambda: engine.update_matching(matching, values))
    except (FieldError, ValidationError, ValueError, TypeError) as exc:
        raise InvalidLookup(f"Bad filter for queue {message_class.queue_name()!r}: {exc}") from exc


def set_default_status(queue: type[QueueMessage] | str, status: str) -> None:
    """The status new messages of the queue get, stored in the database (e.g. ``Paused``)."""
    message_class = registry.resolve(queue)
    status = validate_settable_status(status)
    message_class.queue_settings().update_or_create(
        queue=message_class.queue_name(), defaults={"default_status": status}
    )


def set_processing_enabled(queue: type[QueueMessage] | str, enabled: bool) -> None:
    """Switch the queue's job on or off, stored in the database; workers honour it within a peek delay."""
    message_class = registry.resolve(queue)
    # A new settings row must keep the queue's current default status, not the column's "Pending".
    message_class.queue_settings().update_or_create(
        queue=message_class.queue_name(),
        defaults={"processing_enabled": bool(enabled)},
        create_defaults={"processing_enabled": bool(enabled), "default_status": default_status(message_class)},
    )


def default_status(queue: type[QueueMessage] | str) -> str:
    """The status new messages of the queue get now."""
    message_class = registry.resolve(queue)
    return engine_for(message_class.queue_options.database).default_status(message_class.queue_model)


def dispatch_due(now: datetime | None = None) -> dict[str, int]:
    """Make due Sleeping messages Pending, in one statement per queue; counts per queue."""
    now = now or timezone.now()
    counts = {}
    for message_class in registry:
        engine = engine_for(message_class.queue_options.database)
        rows = message_class.queue_model.objects.using(engine.alias)
        counts[message_class.queue_name()] = moved = rows.due(now).update(status=Status.PENDING, updated_at=now)
        if moved:
            engine.notify(message_class.queue_name())
    return counts


def _check_at(function: str, at: datetime) -> None:
    if not isinstance(at, datetime):
        raise InvalidArgument(f"{function} needs a datetime, got {type(at).__name__}.")
    check_datetime("at", at)


def _leases(items: Iterable[QueueItem]) -> list[tuple[type[QueueItem], str, list[QueueItem]]]:
    groups: dict[tuple[type[QueueItem], str], list[QueueItem]] = defaultdict(list)
    for item in items:
        if item.correlation_id is None:
            raise InvalidMessage(f"{item} was never leased; lease it before completing it.")
        groups[type(item), item.correlation_id].append(item)
    return [(model, cid, batch) for (model, cid), batch in groups.items()]


def _per_lease(items: Iterable[QueueItem], what: str, act: Callable[..., list[int]]) -> list[int]:
    """``act(engine, model, correlation_id, batch)`` per lease; returns the ids it changed, logs the rest."""
    done = []
    for model, correlation_id, batch in _leases(items):
        engine = engine_for(model.message_class.queue_options.database)
        changed = retried(engine.alias, lambda: act(engine, model, correlation_id, batch))  # noqa: B023  (called here)
        done += _report(model, correlation_id, batch, changed, what)
    return done


def _fenced(items: Iterable[QueueItem], what: str, assignments: str, params: Any, **fields: Any) -> list[int]:
    """``SET assignments`` on the rows still leased by their item's lease; ``fields`` mirror it on the items."""

    def update(engine: Engine, model: type[QueueItem], correlation_id: str, batch: list[QueueItem]) -> list[int]:
        changed = engine.update_leased(model, [i.pk for i in batch], correlation_id, assignments, params(engine))
        _apply(batch, changed, **fields)
        return changed

    return _per_lease(items, what, update)


def _apply(batch: Sequence[QueueItem], changed: Sequence[int], **fields: Any) -> None:
    ids = set(changed)
    for item in batch:
        if item.pk in ids:
            item.__dict__.update(fields)


def _report(
    model: type[QueueItem], correlation_id: str, batch: Sequence[QueueItem], changed: Sequence[int], what: str
) -> list[int]:
    lost = sorted({item.pk for item in batch} - set(changed))
    if lost:
        logger.warning(
            "Lease lost on %s message(s) %s of queue %s; not %s, rows left as they are.",
            len(lost),
            lost,
            model.message_class.queue_name(),
            what,
            extra={
                "action": "lease_lost",
                "queue": model.message_class.queue_name(),
                "nexus.correlation_id": correlation_id,
            },
        )
    return list(changed)
