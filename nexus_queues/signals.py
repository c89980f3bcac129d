"""Django signals sent as messages change state: the extension point for acting on them.

Each is sent with the message class as ``sender``, once per call that changed something, after the
change commits on the queue's database (at once in autocommit, at the end of the caller's
``transaction.atomic`` otherwise, never when it rolls back). Receivers run through ``send_robust``:
one that raises is logged and cannot undo or lose the change. With no receiver for a sender, the
call sites cost one dictionary look-up.

``enqueued``
    ``result``: the :class:`~nexus_queues.enqueueing.EnqueueResult` of one ``enqueue`` or
    ``enqueue_many`` call (``stored``, ``discarded``, ``superseded``, ``ids`` when asked for); sent
    even when every message was an idempotent duplicate.
``leased``
    ``items``: the leased :class:`~nexus_queues.models.QueueItem` rows, each with its lease's ``correlation_id``.
``processed``
    ``items``: the items ``mark_processed`` completed (deleted ones included when the queue keeps none).
``failed``
    ``items``: the items ``mark_error`` set to Error; ``exc``: the exception.
``abandoned``
    ``count``: how many expired leases of the queue became Abandoned; ``now``: the time they were
    compared with. Only the count: reading the rows would cost another query on every housekeeping pass.
``synced``
    ``sync_id``: the primary key of the Spark sync's record (``nexus_queues.contrib.spark.models.Sync``;
    one per micro-batch of a stream); ``counts``: its ``SyncCounts``. Sent once the sync's merge is
    committed, never for a failed sync nor for a stream's batch that Spark replays.

::

    @receiver(processed, sender=SendOrderConfirmation)
    def count_sent(sender, items, **kwargs):
        metrics.increment("confirmations", len(items))
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.dispatch import Signal

if TYPE_CHECKING:
    from .messages import QueueMessage
    from .models import QueueItem

logger = logging.getLogger("nexus_queues.signals")

# Cached per sender, as Django's model signals are: has_listeners() is then one look-up.
enqueued = Signal(use_caching=True)
"""Messages were stored by ``enqueue`` or ``enqueue_many``."""
leased = Signal(use_caching=True)
"""Messages were leased."""
processed = Signal(use_caching=True)
"""Leased messages were marked Processed (or deleted, for a queue that keeps none)."""
failed = Signal(use_caching=True)
"""Leased messages were marked Error."""
abandoned = Signal(use_caching=True)
"""Expired leases became Abandoned."""
synced = Signal(use_caching=True)
"""A Spark sync (or a stream's micro-batch) was merged into the queue."""


def send(signal: Signal, sender: type[QueueMessage], using: str, **kwargs: Any) -> None:
    """Send ``signal`` once the open transaction on ``using`` commits (at once outside one), if it has receivers."""
    if signal.has_listeners(sender):
        transaction.on_commit(lambda: _send_robust(signal, sender, kwargs), using=using)


def send_items(
    signal: Signal, items: Iterable[QueueItem], changed: Collection[int] | None = None, **kwargs: Any
) -> None:
    """:func:`send` per queue of ``items``, with those whose id is in ``changed`` (all when None); none when empty."""
    if not signal.receivers:
        return
    wanted = None if changed is None else set(changed)
    by_queue: dict[type[QueueMessage], list[QueueItem]] = defaultdict(list)
    for item in items:
        if wanted is None or item.pk in wanted:
            by_queue[type(item).message_class].append(item)
    for message_class, mine in by_queue.items():
        send(signal, message_class, message_class.queue_options.database, items=mine, **kwargs)


def _send_robust(signal: Signal, sender: type[QueueMessage], kwargs: dict[str, Any]) -> None:
    for receiver, response in signal.send_robust(sender, **kwargs):
        if isinstance(response, Exception):
            logger.error(
                "Signal receiver %r raised for queue %s; the change stands.", receiver, sender.queue_name(),
                exc_info=response, extra={"action": "receiver_failed"},
            )
