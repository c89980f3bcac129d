"""Delayed dispatch: due Sleeping messages become Pending, through a pluggable delayed message store."""

from __future__ import annotations

import copy
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from django.db import reset_queries, transaction
from django.db.models import Min
from django.utils import timezone
from django.utils.module_loading import import_string

from ..backends import backend_for
from ..conf import settings
from ..enqueueing import enqueue
from ..exceptions import ConfigurationError
from ..failures import describe
from ..messages import QueueMessage
from ..quarantine import read_around
from ..registry import registry
from ..status import Status
from .breaker import DATABASE_ERRORS, CircuitBreaker, CircuitBreakers, RateLimit, reset_connections

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

    def parts(self) -> list[DelayedMessageStore]:
        """Parts dispatched one by one, each in its own transaction, so that one that fails is logged and
        backs off alone; by default the whole store is one part."""
        return [self]

    def __str__(self) -> str:
        return type(self).__name__

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

    queue: type[QueueMessage] | None = None
    """The queue of a part; None: every queue."""

    def parts(self) -> list[DelayedMessageStore]:
        """One part per queue: a queue whose table fails holds up no other."""
        if self.queue is not None:
            return [self]
        return [self._part(message_class) for message_class in registry]

    def __str__(self) -> str:
        return f"queue {self.queue.queue_name()}" if self.queue is not None else "every queue"

    def store(self, message: QueueMessage, at: datetime) -> None:
        enqueue(message, at=at)

    def dispatch(self, delayed: DelayedMessage) -> None:
        """Nothing to send: the row is in its queue's table already, and :meth:`remove` makes it Pending."""

    def fetch_next_due(self, at: datetime, limit: int) -> list[DelayedMessage]:
        """Rows Python cannot read become Error (:mod:`~nexus_queues.quarantine`) rather than fail the fetch."""
        found = []
        for message_class in self._classes():
            due = _rows(message_class).due(at).order_by("process_at", "id")
            found += read_around(partial(_fetch, message_class, due, limit), due, limit)
        # A queue's rows come in order; only the whole store's need merging.
        return found if self.queue is not None else sorted(found, key=lambda d: d.due_at)[:limit]

    def remove(self, delayed: DelayedMessage) -> bool:
        message_class = registry.get(delayed.queue)
        moved = _sleeping(message_class, delayed).update(status=Status.PENDING, updated_at=timezone.now())
        if moved:
            backend_for(message_class.queue_options.database).notify(delayed.queue)
        return bool(moved)

    def increment_failure_count(self, delayed: DelayedMessage) -> bool:
        message_class = registry.get(delayed.queue)
        row = _sleeping(message_class, delayed).only("headers").first()
        if row is None:
            return False
        headers = {**row.headers, FAILURES_HEADER: delayed.failures + 1}
        return bool(_sleeping(message_class, delayed).update(headers=headers, updated_at=timezone.now()))

    def next(self) -> datetime | None:
        """Rows Python cannot read become Error rather than fail the look-up."""
        times = []
        for message_class in self._classes():
            sleeping = _rows(message_class).sleeping().order_by("process_at")
            times.append(read_around(partial(_earliest, sleeping), sleeping))
        return min((t for t in times if t is not None), default=None)

    def fail(self, delayed: DelayedMessage, exc: BaseException) -> None:
        error = describe(exc)
        _sleeping(registry.get(delayed.queue), delayed).update(
            status=Status.ERROR, error_type=error.type, error_message=error.message, error_traceback=error.traceback,
            updated_at=timezone.now(),
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        aliases = sorted({c.queue_options.database for c in self._classes()}) or ["default"]
        with _atomic_all(aliases):
            for alias in aliases:
                backend_for(alias).take_write_lock()
            yield

    def _classes(self) -> list[type[QueueMessage]]:
        return [self.queue] if self.queue is not None else list(registry)

    def _part(self, message_class: type[QueueMessage]) -> QueueTableStore:
        part = copy.copy(self)  # a subclass's part is of that subclass, with its state
        part.queue = message_class
        return part


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
        self.step_breakers = CircuitBreakers(
            "The dispatch step of {}", settings.DISPATCH_TIME_TO_TRIGGER_FETCH_CIRCUIT_BREAKER, longest
        )
        """Per part of the store, watching its fetch and ``next()``."""
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
        """Dispatch what is due at ``now``, part by part of the store; return the seconds to sleep before the
        next step. A part that fails (a queue whose table cannot be read) is logged and backs off alone."""
        now = now or timezone.now()
        return min((self._step(part, now) for part in self.store.parts()), default=self.max_sleep)

    def dispatch_due(self, now: datetime) -> int:
        """Move up to a batch of due messages per part of the store, in one transaction each; how many moved."""
        return sum(self._dispatch_due(part, now) for part in self.store.parts())

    def _step(self, part: DelayedMessageStore, now: datetime) -> float:
        breaker = self.step_breakers[str(part)]
        if (left := breaker.waiting()) > 0:
            return left
        try:
            moved = self._dispatch_due(part, now)
            upcoming = part.next() if moved < self.batch_size else now
            breaker.success()
        except Exception as exc:
            reset_connections()
            return breaker.failure(exc)
        if upcoming is None:
            return self.max_sleep
        return min(self.max_sleep, max(0.0, (upcoming - timezone.now()).total_seconds()))

    def _dispatch_due(self, part: DelayedMessageStore, now: datetime) -> int:
        failed: list[tuple[DelayedMessage, BaseException]] = []
        moved = 0
        with part.transaction():
            for delayed in part.fetch_next_due(now, self.batch_size):
                try:
                    with transaction.atomic():
                        part.dispatch(delayed)
                        moved += part.remove(delayed)
                    self.dispatch_breaker.success()
                except DATABASE_ERRORS:
                    raise  # the database, not the message: the part's step fails and backs off
                except Exception as exc:
                    failed.append((delayed, exc))
        for delayed, error in failed:
            self._failed(part, delayed, error)
        if moved:
            logger.info("Dispatched %s due message(s) of %s.", moved, part, extra={"action": "dispatched"})
        return moved

    def _failed(self, part: DelayedMessageStore, delayed: DelayedMessage, exc: BaseException) -> None:
        pause = max(self.recovery.hit(), self.dispatch_breaker.failure(exc))
        if delayed.failures >= self.retries:
            logger.error("Message %s of %s failed dispatch %s time(s): set to Error.", delayed.key, delayed.queue,
                         delayed.failures + 1, exc_info=exc, extra={"action": "dispatch_failed"})
            part.fail(delayed, exc)
        else:
            part.increment_failure_count(delayed)
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
    return message_class.queue_model.objects.using(message_class.queue_options.database)


def _sleeping(message_class: type[QueueMessage], delayed: DelayedMessage) -> Any:
    return _rows(message_class).sleeping().filter(pk=delayed.key)


def _fetch(message_class: type[QueueMessage], due: Any, limit: int) -> list[DelayedMessage]:
    rows = due.select_for_update(skip_locked=True).values_list("pk", "process_at", "headers")[:limit]
    return [
        DelayedMessage(message_class.queue_name(), pk, at, int(headers.get(FAILURES_HEADER, 0)))
        for pk, at, headers in rows
    ]


def _earliest(rows: Any) -> datetime | None:
    return rows.aggregate(t=Min("process_at"))["t"]


@contextmanager
def _atomic_all(aliases: list[str]) -> Iterator[None]:
    if not aliases:
        yield
        return
    with transaction.atomic(using=aliases[0]), _atomic_all(aliases[1:]):
        yield

