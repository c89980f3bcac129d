"""Dispatching: due Sleeping messages become Pending, a batch per transaction, and the queue's workers are woken."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db.models import Min
from django.utils import timezone

from .backends import backend_for
from .conf import settings
from .messages import QueueMessage
from .quarantine import read_around
from .registry import registry
from .status import Status

logger = logging.getLogger("nexus_queues.dispatch")


def dispatch_due(now: datetime | None = None) -> dict[str, int]:
    """Make every message due at ``now`` Pending, queue by queue, ``DISPATCH_BATCH_SIZE`` per transaction (the
    dispatch loop's step, run once); the count moved per queue."""
    now = now or timezone.now()
    return {message_class.queue_name(): _move_all(message_class, now) for message_class in registry}


def move_due(message_class: type[QueueMessage], now: datetime, limit: int) -> int:
    """Make up to ``limit`` of the queue's messages due at ``now`` Pending, the earliest first, in one transaction
    that skips rows another dispatcher holds; wake the queue's workers. Unreadable rows become Error."""
    backend = backend_for(message_class.queue_options.database)
    with backend.write_transaction():
        due = message_class.queue_items().due(now).order_by("process_at", "id")
        ids = read_around(lambda: _lock(due, limit), due, limit)
        moved = _make_pending(message_class, ids) if ids else 0
        if moved:
            backend.notify(message_class.queue_name())
    if moved:
        logger.info("Dispatched %s due message(s) of queue %s.", moved, message_class.queue_name(),
                    extra={"action": "dispatched"})
    return moved


def next_due(message_class: type[QueueMessage]) -> datetime | None:
    """When the queue's next Sleeping message is due, None when none sleeps; unreadable rows become Error."""
    sleeping = message_class.queue_items().sleeping().order_by("process_at")
    return read_around(lambda: sleeping.aggregate(t=Min("process_at"))["t"], sleeping)


def _move_all(message_class: type[QueueMessage], now: datetime) -> int:
    batch_size = settings.DISPATCH_BATCH_SIZE
    total = moved = move_due(message_class, now, batch_size)
    while moved == batch_size:
        moved = move_due(message_class, now, batch_size)
        total += moved
    return total


def _lock(due: Any, limit: int) -> list[Any]:
    # Reading process_at, not only the ids, is what finds a row whose time Python cannot read.
    return [pk for pk, _ in due.select_for_update(skip_locked=True).values_list("pk", "process_at")[:limit]]


def _make_pending(message_class: type[QueueMessage], ids: list[Any]) -> int:
    return message_class.queue_items().sleeping().filter(pk__in=ids).update_unfinished(
        status=Status.PENDING, updated_at=timezone.now()
    )
