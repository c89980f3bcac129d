"""Circuit breakers: how the worker and dispatch loops ride out a failing database without busy-looping."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import timedelta

from django.db import DatabaseError, InterfaceError, connections

from ..exceptions import DatabaseUnavailable
from ..failures import message_of

logger = logging.getLogger("nexus_queues.breaker")

FIRST_BACKOFF = 0.1

DATABASE_ERRORS = (DatabaseError, InterfaceError)
"""What a failing or lost database raises. Django's InterfaceError is no DatabaseError: PyMySQL raises it
for a connection the server killed (``InterfaceError: (0, '')``)."""


def reset_connections() -> None:
    """Close this thread's connections, so that the next query reconnects; those inside a transaction are left
    to its rollback, and a connection already gone cannot fail the close."""
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            continue
        try:
            connection.close()
        except DATABASE_ERRORS:
            pass


class CircuitBreaker:
    """Watches one kind of operation. Each failure asks for a growing pause; once the operation has
    kept failing for ``trigger_after`` the breaker triggers (logged as an error) and pauses are the longest."""

    def __init__(
        self, name: str, trigger_after: timedelta, max_backoff: timedelta,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.trigger_after = trigger_after.total_seconds()
        self.max_backoff = max_backoff.total_seconds()
        self.clock = clock
        self.failures = 0
        self.failing_since: float | None = None
        self.triggered = False
        self.retry_at = -math.inf
        self.last_error = ""

    def waiting(self) -> float:
        """Seconds left of the pause the last failure asked for (0 when the operation may run)."""
        return max(0.0, self.retry_at - self.clock())

    def failing_for(self) -> float:
        """Seconds since the first of the failures in a row (0 while the operation works)."""
        return 0.0 if self.failing_since is None else self.clock() - self.failing_since

    def give_up_if_late(self) -> None:
        """:class:`DatabaseUnavailable` when the next try would come after ``trigger_after`` of failures: what a
        burst process calls after each failure, so that it ends within that time."""
        if self.failures and self.failing_for() + self.waiting() >= self.trigger_after:
            raise DatabaseUnavailable(
                f"The database kept failing for {self.failing_for():.1f} s ({self.name}: {self.last_error}); a burst "
                f"process gives up after WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER ({self.trigger_after:g} s)."
            )

    def success(self) -> None:
        """The operation worked: close the breaker."""
        if self.failures:
            logger.info("%s recovered after %s failure(s).", self.name, self.failures, extra={"action": "recovered"})
        self.failures, self.failing_since, self.triggered, self.retry_at = 0, None, False, -math.inf

    def failure(self, exc: BaseException) -> float:
        """Record a failure; return the seconds to pause before trying again."""
        now = self.clock()
        if self.failing_since is None:
            self.failing_since = now
        self.failures += 1
        self.last_error = " ".join(message_of(exc).split())  # one line: driver messages span several
        if not self.triggered and now - self.failing_since >= self.trigger_after:
            self.triggered = True
            logger.error(
                "%s circuit breaker triggered: failing for %.0f s (%s).", self.name, now - self.failing_since,
                message_of(exc),
                extra={"action": "breaker_triggered"},
            )
        else:
            logger.warning(
                "%s failed (%s: %s); retrying.", self.name, type(exc).__name__, message_of(exc),
                exc_info=None if isinstance(exc, DATABASE_ERRORS) else exc,  # anything else is a bug to find
                extra={"action": "retry"},
            )
        doubled = FIRST_BACKOFF * 2 ** min(self.failures - 1, 60)  # the exponent capped: no float overflow
        pause = self.max_backoff if self.triggered else min(self.max_backoff, doubled)
        self.retry_at = now + pause
        return pause


class CircuitBreakers:
    """One :class:`CircuitBreaker` per name (a queue), made on first use."""

    def __init__(
        self, title: str, trigger_after: timedelta, max_backoff: timedelta,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.title, self.trigger_after, self.max_backoff, self.clock = title, trigger_after, max_backoff, clock
        self._breakers: dict[str, CircuitBreaker] = {}

    def __getitem__(self, name: str) -> CircuitBreaker:
        if name not in self._breakers:
            self._breakers[name] = CircuitBreaker(
                self.title.format(name), self.trigger_after, self.max_backoff, self.clock
            )
        return self._breakers[name]

    def failing(self) -> list[CircuitBreaker]:
        """The breakers whose operation failed last time."""
        return [breaker for breaker in self._breakers.values() if breaker.failures]

