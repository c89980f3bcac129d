"""Delayed dispatch: due Sleeping messages become Pending, through a pluggable delayed message store."""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import reset_queries, transaction
from django.db.models import Min
from django.utils import timezone
from django.utils.module_loading import import_string

from .breaker import DATABASE_ERRORS, CircuitBreaker, RateLimit, reset_connections
from .conf import settings
from .engines import engine_for
from .enqueueing import enqueue
from .exceptions import ConfigurationError
from .failures import describe
from .messages import QueueMessage
from .registry import registry
from .status import Status

logger = logging.getLogger("nexus_queues.dispatch")

FAILURES_HEADER = "nexus.dispatch_failures"


@dataclass
class DelayedMessage:
    """A message waiting in a delayed store for its time."""

    queue: str
    key: Any
    """The store's own id of it (the row id in the built-in store)."""
    due_at: datetime
    failures: int = 0
    message: QueueMessage | None = None
    """The message itself, for stores that keep it outside its queue table."""


class DelayedMessageStore(ABC):
    """Where delayed messages wait. Subclass it and name it in ``NEXUS_QUEUES["DISPATCH_STORE"]``."""

    def setup(self) -> None:  # noqa: B027 - optional hook
        """Create what the store needs (tables, indexes); called once before the loop starts."""

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The transaction that holds fetched messages' locks until they are dispatched and removed."""
        with transaction.atomic():
            yield

    @abstractmethod
    def store(self, message: QueueMessage, at: datetime) -> None:
        """Keep ``message`` until ``at``."""

    @abstractmethod
    def fetch_next_due(self, at: datetime, limit: int) -> list[DelayedMessage]:
        """Up to ``limit`` messages due at ``at``, oldest first, locked against other dispatchers."""

    @abstractmethod
    def remove(self, delayed: DelayedMessage) -> bool:
        """Take a dispatched message out of the store; False when it was already gone."""

    @abstractmethod
    def increment_failure_count(self, delayed: DelayedMessage) -> bool:
        """Count a failed dispatch of the message; False when it was already gone."""

    @abstractmethod
    def next(self) -> datetime | None:
        """When the next message is due, or None when the store is empty."""

    def dispatch(self, delayed: DelayedMessage) -> None:
        """Send a due message to its queue (Pending)."""
        if delayed.message is None:
            raise ConfigurationError(f"{type(self).__name__} fetched a message without its content.")
        enqueue(delayed.message, start_processing=True)

    def fail(self, delayed: DelayedMessage, exc: BaseException) -> None:
        """Give up on a message whose dispatch kept failing: it lands in its queue as Error."""
        if delayed.message is not None:
            enqueue(delayed.message, status=Status.ERROR)
        self.remove(delayed)


class QueueTableStore(DelayedMessageStore):
    """The built-in store: Sleeping rows of the queue tables. A message already sits in its queue's
    table, so dispatching it is removing it from the sleeping set: one fenced status change."""

    def store(self, message: QueueMessage, at: datetime) -> None:
        enqueue(message, at=at)

    def dispatch(self, delayed: DelayedMessage) -> None:
        """Nothing to send: the row is in its queue's table already, and :meth:`remove` makes it Pending."""

    def fetch_next_due(self, at: datetime, limit: int) -> list[DelayedMessage]:
        found = []
        for message_class in registry:
            rows = _rows(message_class).due(at).select_for_update(skip_locked=True).order_by("process_at", "id")
            found += [
                DelayedMessage(message_class.queue_name(), pk, due, int(headers.get(FAILURES_HEADER, 0)))
                for pk, due, headers in rows.values_list("pk", "process_at", "headers")[:limit]
            ]
        return sorted(found, key=lambda d: d.due_at)[:limit]

    def remove(self, delayed: DelayedMessage) -> bool:
        message_class = registry.get(delayed.queue)
        moved = _sleeping(message_class, delayed).update(status=Status.PENDING, updated_at=timezone.now())
        if moved:
            engine_for(message_class.queue_options.database).notify(delayed.queue)
        return bool(moved)

    def increment_failure_count(self, delayed: DelayedMessage) -> bool:
        message_class = registry.get(delayed.queue)
        row = _sleeping(message_class, delayed).only("headers").first()
        if row is None:
            return False
        headers = {**row.headers, FAILURES_HEADER: delayed.failures + 1}
        return bool(_sleeping(message_class, delayed).update(headers=headers, updated_at=timezone.now()))

    def next(self) -> datetime | None:
        times = [_rows(c).sleeping().aggregate(t=Min("process_at"))["t"] for c in registry]
        return min((t for t in times if t is not None), default=None)

    def fail(self, delayed: DelayedMessage, exc: BaseException) -> None:
        error = describe(exc)
        _sleeping(registry.get(delayed.queue), delayed).update(
            status=Status.ERROR, error_type=error.type, error_message=error.message, error_traceback=error.traceback,
            updated_at=timezone.now(),
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        aliases = sorted({c.queue_options.database for c in registry}) or ["default"]
        with _atomic_all(aliases):
            for alias in aliases:
                engine_for(alias).take_write_lock()
            yield


class Dispatcher:
    """The dispatch loop's steps: move what is due, then say how long to sleep."""

    def __init__(self, store: DelayedMessageStore | None = None) -> None:
        self.store = store or load_store()
        self.batch_size = settings.DISPATCH_BATCH_SIZE
        self.retries = settings.DISPATCH_NUMBER_OF_RETRIES
        self.max_sleep = settings.DISPATCH_MAX_SLEEP.total_seconds()
        longest = settings.WORKER_MAX_BACKOFF
        self.store_breaker = CircuitBreaker(
            "Storing delayed messages", settings.DISPATCH_TIME_TO_TRIGGER_STORE_CIRCUIT_BREAKER, longest
        )
        self.fetch_breaker = CircuitBreaker(
            "Fetching due messages", settings.DISPATCH_TIME_TO_TRIGGER_FETCH_CIRCUIT_BREAKER, longest
        )
        self.dispatch_breaker = CircuitBreaker(
            "Dispatching due messages", settings.DISPATCH_TIME_TO_TRIGGER_DISPATCH_CIRCUIT_BREAKER, longest
        )
        self.recovery = RateLimit(settings.DISPATCH_MAXIMUM_RECOVERY_FAILURES_PER_SECOND)

    def store_message(self, message: QueueMessage, at: datetime) -> None:
        """Keep ``message`` until ``at`` (the store circuit breaker watches this)."""
        while True:
            try:
                self.store.store(message, at)
                self.store_breaker.success()
                return
            except Exception as exc:
                reset_connections()
                time.sleep(self.store_breaker.failure(exc))

    def step(self, now: datetime | None = None) -> float:
        """Dispatch what is due at ``now``; return the seconds to sleep before the next step."""
        now = now or timezone.now()
        try:
            moved = self.dispatch_due(now)
            upcoming = self.store.next() if moved < self.batch_size else now
            self.fetch_breaker.success()
        except Exception as exc:
            reset_connections()
            return self.fetch_breaker.failure(exc)
        if upcoming is None:
            return self.max_sleep
        return min(self.max_sleep, max(0.0, (upcoming - timezone.now()).total_seconds()))

    def dispatch_due(self, now: datetime) -> int:
        """Move up to a batch of due messages in one transaction; returns how many moved."""
        failed: list[tuple[DelayedMessage, BaseException]] = []
        moved = 0
        with self.store.transaction():
            for delayed in self.store.fetch_next_due(now, self.batch_size):
                try:
                    with transaction.atomic():
                        self.store.dispatch(delayed)
                        moved += self.store.remove(delayed)
                    self.dispatch_breaker.success()
                except DATABASE_ERRORS:
                    raise  # the database, not the message: the whole step fails and backs off
                except Exception as exc:
                    failed.append((delayed, exc))
        for delayed, error in failed:
            self._failed(delayed, error)
        if moved:
            logger.info("Dispatched %s due message(s).", moved, extra={"action": "dispatched"})
        return moved

    def _failed(self, delayed: DelayedMessage, exc: BaseException) -> None:
        pause = max(self.recovery.hit(), self.dispatch_breaker.failure(exc))
        if delayed.failures >= self.retries:
            logger.error("Message %s of %s failed dispatch %s time(s): set to Error.", delayed.key, delayed.queue,
                         delayed.failures + 1, exc_info=exc, extra={"action": "dispatch_failed"})
            self.store.fail(delayed, exc)
        else:
            self.store.increment_failure_count(delayed)
        time.sleep(pause)


class DispatchLoop:
    """``nexus_dispatch``: step, then sleep until the next message is due or a wake-up arrives."""

    def __init__(
        self, *, burst: bool = False, listen: bool | None = None, dispatcher: Dispatcher | None = None
    ) -> None:
        from .wakeups import Wakeups

        self.dispatcher = dispatcher or Dispatcher()
        self.burst = burst
        aliases = [c.queue_options.database for c in registry] or ["default"]
        self.wakeups = Wakeups(aliases, listen=settings.WORKER_LISTEN if listen is None else listen)
        self.stopping = False

    def stop(self) -> None:
        """End the loop after the current step."""
        self.stopping = True
        self.wakeups.nudge()

    def run(self) -> None:
        """Loop until :meth:`stop` (or, with ``burst``, until nothing more is due now)."""
        self.dispatcher.store.setup()
        self.wakeups.connect()
        logger.info("Dispatch loop started.", extra={"action": "started"})
        try:
            while not self.stopping:
                reset_queries()  # with DEBUG on, Django would keep every query of a long-running process
                pause = self.dispatcher.step()
                if self.burst and pause > 0:
                    break
                if pause > 0:
                    self.wakeups.wait(pause)
        finally:
            self.wakeups.close()
            reset_connections()
        logger.info("Dispatch loop stopped.", extra={"action": "stopped"})


def load_store() -> DelayedMessageStore:
    """The store ``NEXUS_QUEUES["DISPATCH_STORE"]`` names, or the built-in one."""
    if not settings.DISPATCH_STORE:
        return QueueTableStore()
    store = import_string(settings.DISPATCH_STORE)()
    if not isinstance(store, DelayedMessageStore):
        raise ConfigurationError(f"DISPATCH_STORE {settings.DISPATCH_STORE!r} is not a DelayedMessageStore subclass.")
    return store


def _rows(message_class: type[QueueMessage]) -> Any:
    return message_class.model.objects.using(message_class.queue_options.database)


def _sleeping(message_class: type[QueueMessage], delayed: DelayedMessage) -> Any:
    return _rows(message_class).sleeping().filter(pk=delayed.key)


@contextmanager
def _atomic_all(aliases: list[str]) -> Iterator[None]:
    if not aliases:
        yield
        return
    with transaction.atomic(using=aliases[0]), _atomic_all(aliases[1:]):
        yield

