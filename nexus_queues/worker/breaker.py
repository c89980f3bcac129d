"""Circuit breakers: how the worker and dispatch loops ride out a failing database without busy-looping."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import timedelta

from .. import connections
from ..backoff import Backoff
from ..deprecations import moved_names
from ..exceptions import DatabaseUnavailable
from ..failures import message_of

logger = logging.getLogger("nexus_queues.breaker")


class CircuitBreaker(Backoff):
    """Watches one kind of operation. Each failure asks for a growing pause; once the operation has
    kept failing for ``trigger_after`` the breaker triggers (logged as an error) and pauses are the longest."""

    def __init__(
        self, name: str, trigger_after: timedelta, max_backoff: timedelta,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name, max_backoff, clock)
        self.trigger_after = trigger_after.total_seconds()
        self.triggered = False
        self.retry_at = -math.inf
        self.last_error = ""

    def waiting(self) -> float:
        """Seconds left of the pause the last failure asked for (0 when the operation may run)."""
        return max(0.0, self.retry_at - self.clock())

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
        self.reset()
        self.triggered, self.retry_at = False, -math.inf

    def failure(self, exc: BaseException) -> float:
        """Record a failure; return the seconds to pause before trying again."""
        now = self.record_failure()
        self.last_error = " ".join(message_of(exc).split())  # one line: driver messages span several
        if not self.triggered and self.failing_for(now) >= self.trigger_after:
            self.triggered = True
            logger.error(
                "%s circuit breaker triggered: failing for %.0f s (%s).", self.name, self.failing_for(now),
                message_of(exc),
                extra={"action": "breaker_triggered"},
            )
        else:
            logger.warning(
                "%s failed (%s: %s); retrying.", self.name, type(exc).__name__, message_of(exc),
                exc_info=None if isinstance(exc, connections.DATABASE_ERRORS) else exc,  # else a bug to find
                extra={"action": "retry"},
            )
        pause = self.max_backoff if self.triggered else self.pause()
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


__getattr__ = moved_names(__name__, {
    "DATABASE_ERRORS": "nexus_queues.connections", "reset_connections": "nexus_queues.connections",
    "FIRST_BACKOFF": "nexus_queues.backoff",
})
