"""Running a whole transaction again: when the database aborted it to break a deadlock, and when the connection was
lost under it while a lease lasts.

Every change takes its row locks in id order, but two transactions of several statements (a worker's
acknowledgement, an upsert that goes by message id) can still wait on each other. The database then
rolls one of them back whole, so running it again is safe, and it is what the error asks for.

A lost connection (the server restarted) is another matter: the transaction may have committed with only its reply
lost, so what runs again must first look up what the lost attempt did (:func:`outlasting`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from django.db import DatabaseError, InterfaceError, connections, transaction
from django.utils import timezone

from .backends import backend_for
from .backoff import Backoff
from .conf import settings
from .connections import DATABASE_ERRORS, reset_connections

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


def outlasting(alias: str, until: datetime, first: Callable[[], T], again: Callable[[], T], what: str) -> T:
    """``first()``; when it loses the connection to ``alias``, ``again()`` once the pause after the loss is over, and
    so on after each loss, the pauses growing, until ``until`` (a lease's end): then the loss is raised.

    ``again`` must look up what the lost attempt left before it writes anything: the connection may have been lost
    after the commit, with only its reply. ``what`` names the work in the log. An error on a live connection, or a
    loss inside a caller's transaction (whose earlier work is gone), is raised at once.
    """
    backoff = Backoff(what, settings.WORKER_MAX_BACKOFF)
    work = first
    while True:
        try:
            result = work()
        except DATABASE_ERRORS as exc:
            pause = _pause(alias, until, backoff, exc)
            if pause is None:
                raise
            if backoff.failures == 1:
                logger.warning("Lost the connection to %s writing %s (%s); trying again until %s.", alias, what,
                               " ".join(str(exc).split()), until.isoformat(), extra={"action": "connection_lost"})
            reset_connections()
            time.sleep(pause)
            work = again
        else:
            if backoff.failures:
                logger.info("Wrote %s after %s lost connection(s).", what, backoff.failures,
                            extra={"action": "reconnected"})
            return result


def _pause(alias: str, until: datetime, backoff: Backoff, exc: DatabaseError | InterfaceError) -> float | None:
    """Seconds to pause after ``exc`` before trying again, counted by ``backoff``; None when it is to be raised: the
    statement's own error, a loss inside a caller's transaction, or ``until`` has come."""
    backend = backend_for(alias)
    left = (until - timezone.now()).total_seconds()
    if backend.connection.in_atomic_block or not backend.lost(exc) or left <= 0:
        return None
    backoff.record_failure()
    return min(backoff.pause(), left)
