"""Running a whole transaction again when the database aborted it to break a deadlock.

Every change takes its row locks in id order, but two transactions of several statements (a worker's
acknowledgement, an upsert that goes by message id) can still wait on each other. The database then
rolls one of them back whole, so running it again is safe, and it is what the error asks for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, connections, transaction

from .backends import backend_for

logger = logging.getLogger("nexus_queues")

T = TypeVar("T")

ATTEMPTS = 5
"""How many times a deadlocked transaction runs before its error reaches the caller."""


def retried(alias: str, work: Callable[[], T]) -> T:
    """``work()``, run again when the database on ``alias`` chose it as a deadlock's victim.

    ``work`` must be one whole transaction (one statement in autocommit, or its own ``atomic``
    block), so that a victim leaves nothing behind. Inside a caller's transaction it runs once:
    the database rolled back the caller's earlier work too, so only the caller can start again.
    """
    if connections[alias].in_atomic_block:
        return work()
    backend = backend_for(alias)
    for attempt in range(1, ATTEMPTS):
        try:
            return work()
        except DatabaseError as exc:
            if not backend.is_deadlock(exc):
                raise
            logger.info(
                "Deadlock victim on %s (attempt %s of %s), running it again: %s",
                alias, attempt, ATTEMPTS, exc, extra={"action": "deadlock_retried"},
            )
    return work()


def atomic_retried(alias: str, work: Callable[[], T]) -> T:
    """``work()`` in one transaction on ``alias``, the whole of it run again after a deadlock."""

    def in_transaction() -> T:
        with transaction.atomic(using=alias):
            return work()

    return retried(alias, in_transaction)
