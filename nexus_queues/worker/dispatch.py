"""The dispatch loop: each step dispatches what is due (:mod:`nexus_queues.dispatching`) queue by queue, each queue
behind its own circuit breaker, then sleeps until the next message is due or a wake-up arrives."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from django.db import reset_queries
from django.utils import timezone

from ..conf import settings
from ..connections import reset_connections
from ..dispatching import move_due, next_due
from ..messages import QueueMessage
from ..processes import ProcessKind
from ..registry import registry
from .breaker import CircuitBreaker, CircuitBreakers
from .presence import Presence
from .readiness import apps_by_database, wait_until_migrated
from .wakeups import Wakeups

logger = logging.getLogger("nexus_queues.dispatch")


class Dispatcher:
    """The dispatch loop's steps: move what is due, then say how long to sleep."""

    def __init__(self) -> None:
        self.batch_size = settings.DISPATCH_BATCH_SIZE
        self.max_sleep = settings.DISPATCH_MAX_SLEEP.total_seconds()
        self.breakers = CircuitBreakers(
            "The dispatch step of queue {}", settings.DISPATCH_TIME_TO_TRIGGER_CIRCUIT_BREAKER,
            settings.WORKER_MAX_BACKOFF,
        )
        """One per queue, watching its moves and its look-up of the next due time."""

    def step(self, now: datetime | None = None) -> float:
        """Dispatch what is due at ``now``, queue by queue; return the seconds from ``now`` to sleep before the
        next step. A queue that fails (its table cannot be read) is logged and backs off alone."""
        now = now or timezone.now()
        return min((self._step(message_class, now) for message_class in registry), default=self.max_sleep)

    def move_batch(self, now: datetime) -> int:
        """Make up to a batch of messages due at ``now`` Pending per queue, one transaction each; how many."""
        return sum(move_due(message_class, now, self.batch_size) for message_class in registry)

    def _step(self, message_class: type[QueueMessage], now: datetime) -> float:
        breaker = self.breakers[message_class.queue_name()]
        if (left := breaker.waiting()) > 0:
            return left
        try:
            moved = move_due(message_class, now, self.batch_size)
            upcoming = next_due(message_class) if moved < self.batch_size else now
            breaker.success()
        except Exception as exc:
            reset_connections()
            return breaker.failure(exc)
        if upcoming is None:
            return self.max_sleep
        return min(self.max_sleep, max(0.0, (upcoming - now).total_seconds()))


class DispatchLoop:
    """``nexus_dispatch``: step, then sleep until the next message is due or a wake-up arrives."""

    def __init__(
        self, *, burst: bool = False, listen: bool | None = None, dispatcher: Dispatcher | None = None
    ) -> None:
        self.dispatcher = dispatcher or Dispatcher()
        self.burst = burst
        aliases = [c.queue_options.database for c in registry] or ["default"]
        self.wakeups = Wakeups(aliases, listen=settings.WORKER_LISTEN if listen is None else listen)
        self.stopping = False
        self._activity = "starting"
        self.presence = Presence(kind=ProcessKind.DISPATCH, dispatches=True, burst=burst,
                                 activity=lambda: "stopping" if self.stopping else self._activity)

    def stop(self) -> None:
        """End the loop after the current step."""
        self.stopping = True
        self.wakeups.nudge()

    def run(self) -> None:
        """Loop until :meth:`stop` (or, with ``burst``, until nothing more is due now)."""
        self.wakeups.connect()
        logger.info("Dispatch loop started.", extra={"action": "started"})
        try:
            if self.burst:
                breaker = CircuitBreaker("The dispatch loop's database",
                                         settings.WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER, settings.WORKER_MAX_BACKOFF)
                wait_until_migrated(apps_by_database(registry), breaker, self.wakeups.wait, lambda: self.stopping)
            self.presence.start()
            while not self.stopping:
                reset_queries()  # with DEBUG on, Django would keep every query of a long-running process
                started = time.monotonic()
                self._activity = "dispatching"
                pause = self.dispatcher.step()
                if self.burst and pause > 0 and not self._retrying():
                    break
                # The pause counts from the step's start, so that a message is not late by the step's time.
                if (pause := pause - (time.monotonic() - started)) > 0:
                    self._activity = "sleeping"
                    self.wakeups.wait(pause)
        finally:
            self.presence.stop()
            self.wakeups.close()
            reset_connections()
        logger.info("Dispatch loop stopped.", extra={"action": "stopped"})

    def _retrying(self) -> bool:
        """Is a queue's dispatch step failing, and so to be tried again? :class:`DatabaseUnavailable` once its next
        try would come after ``DISPATCH_TIME_TO_TRIGGER_CIRCUIT_BREAKER`` of failures (a burst ends then)."""
        failing = self.dispatcher.breakers.failing()
        for breaker in failing:
            breaker.give_up_if_late()
        return bool(failing)
