"""Queue jobs: the code that processes a queue's messages, found in each installed app's ``jobs`` module."""

from __future__ import annotations

import contextvars
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from ..cancelling import cancelled_among
from ..exceptions import AlreadyRegistered, ConfigurationError, MessageCancelled, NotRegistered
from ..leasing import DEFAULT_LEASE_TIME
from ..messages import QueueMessage
from ..start_requests import start_on_request
from .schedules import Schedule, schedule_of

if TYPE_CHECKING:
    from ..models import QueueItem

Outcome = datetime | BaseException | None
"""What processing one message came to: done (None), run again at a time, or failed."""

_previous: contextvars.ContextVar[QueueMessage | None] = contextvars.ContextVar("nexus_previous", default=None)
_in_hand: contextvars.ContextVar[Sequence[QueueItem]] = contextvars.ContextVar("nexus_in_hand", default=())


def previous_message() -> QueueMessage | None:
    """The last processed version of the message being processed; None outside a job or when there is none."""
    return _previous.get()


class QueueJob:
    """Processes one queue's messages. Subclass it in an app's ``jobs`` module:

    ``message_class`` names the queue; override :meth:`process` (one message, may return a time to
    run it again) or :meth:`process_batch` (every item leased in a run).
    """

    message_class: ClassVar[type[QueueMessage]]
    batch_size: ClassVar[int] = 100
    """Messages leased per run."""
    lease_time: ClassVar[timedelta] = DEFAULT_LEASE_TIME
    """How long a crashed worker's messages stay Leased before they become Abandoned."""
    max_attempts: ClassVar[int] = 1
    """Runs of a failing message before it is set to Error (1 = no retry)."""
    backoff: ClassVar[timedelta] = timedelta(seconds=30)
    """Wait before the first retry; doubled for each later one."""
    schedule: ClassVar[str | timedelta | None] = None
    """When to drain the queue: a cron expression or an interval; None (the default) drains it continuously."""
    time_zone: ClassVar[str | None] = None
    """The time zone of a cron schedule (default: the ``TIME_ZONE`` setting)."""
    logs_failure_tracebacks: ClassVar[bool] = True
    """Does the worker's line for a failed message carry its traceback? False when the job logs it itself."""
    time_limit: ClassVar[timedelta | None] = None
    """How long processing one message may take before the worker stops it (None: no limit). A job that overrides
    :meth:`process_batch` gets ``time_limit`` times the number of items for the whole call."""
    saved_fields: ClassVar[tuple[str, ...]] = ()
    """Fields of the queue's rows (a subclass of the item model's) that the job sets on the items it processes, saved
    with each item's outcome by the same fenced write: a worker that lost the lease saves none."""

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not abstract:
            _validate(cls)
            jobs.register(cls)
            start_on_request(cls.message_class, cls.schedule is not None)

    @classmethod
    def name(cls) -> str:
        """The job's dotted path, as recorded on its runs."""
        return f"{cls.__module__}.{cls.__qualname__}"

    @classmethod
    def get_schedule(cls) -> Schedule | None:
        """The job's schedule, None when it runs continuously; :class:`InvalidSchedule` when it is not one."""
        return None if cls.schedule is None else schedule_of(cls.schedule, cls.time_zone)

    @classmethod
    def timetable(cls) -> Schedule | None:
        """Deprecated: :meth:`get_schedule`."""
        warnings.warn("QueueJob.timetable() is deprecated: call get_schedule().", DeprecationWarning, stacklevel=2)
        return cls.get_schedule()

    def process(self, message: Any) -> datetime | None:
        """Process one message; return a time to process it again then, or None when it is done."""
        raise NotImplementedError(f"{self.name()} must implement process(message) or process_batch(items).")

    def process_batch(self, items: Sequence[QueueItem]) -> Mapping[int, Outcome] | None:
        """Process every item of a run; map an item's pk to a time or exception, missing pks are done.

        By default calls :meth:`process` per item, with :func:`previous_message` set.
        """
        return {item.pk: self.run_one(item) for item in items}

    def run_one(self, item: QueueItem) -> Outcome:
        """Process one leased item with its previous version in context; an exception becomes its outcome."""
        token = _previous.set(item.previous_message)
        try:
            with in_hand([item]):
                return self.process(item.message)
        except Exception as exc:
            return exc
        finally:
            _previous.reset(token)

    @property
    def cancelled(self) -> bool:
        """Has the message being processed been cancelled (in :meth:`process_batch`: any of the run's)?

        Each look is one query by primary key: look between steps of work, not in a tight loop.
        """
        return bool(cancelled_among(_in_hand.get()))

    def check_cancelled(self) -> None:
        """Raise :class:`~nexus_queues.exceptions.MessageCancelled` when :attr:`cancelled`: the worker then logs
        the message as cancelled and leaves it so."""
        items = _in_hand.get()
        ids = sorted(cancelled_among(items))
        if ids:
            queue = items[0].message_class.queue_name()
            raise MessageCancelled(f"Message(s) {', '.join(map(str, ids))} of queue {queue!r} cancelled.")

    def acknowledge(self) -> None:
        """Called first in the transaction that acknowledges a run, so that what it writes commits (or not) with the
        run's outcomes; ``transaction.on_commit`` then defers work until they are committed. By default, nothing."""

    def acknowledged(self) -> None:
        """Called once a run's acknowledgement has committed (its outcomes and :attr:`saved_fields` stored). By
        default, nothing."""

    def retry_at(self, item: QueueItem, now: datetime) -> datetime | None:
        """When to try a failed item again, or None when its attempts are used up."""
        if item.attempts >= self.max_attempts:
            return None
        return now + self.backoff * 2 ** max(0, item.attempts - 1)


@contextmanager
def in_hand(items: Sequence[QueueItem]) -> Iterator[None]:
    """The items :attr:`QueueJob.cancelled` looks at while the block runs (the worker's run sets its batch)."""
    token = _in_hand.set(items)
    try:
        yield
    finally:
        _in_hand.reset(token)


def _validate(cls: type[QueueJob]) -> None:
    message_class = getattr(cls, "message_class", None)
    is_queue = isinstance(message_class, type) and issubclass(message_class, QueueMessage)
    if not (is_queue and hasattr(message_class, "queue_model")):
        raise ConfigurationError(f"{cls.__qualname__}.message_class must be a queue's message class.")
    if not isinstance(cls.batch_size, int) or cls.batch_size < 1:
        raise ConfigurationError(f"{cls.__qualname__}.batch_size must be a positive integer.")
    if not isinstance(cls.max_attempts, int) or cls.max_attempts < 1:
        raise ConfigurationError(f"{cls.__qualname__}.max_attempts must be a positive integer.")
    for name in ("lease_time", "backoff"):
        value = getattr(cls, name)
        if not isinstance(value, timedelta) or value <= timedelta(0):
            raise ConfigurationError(f"{cls.__qualname__}.{name} must be a positive timedelta.")
    limit = cls.time_limit
    if limit is not None and (not isinstance(limit, timedelta) or limit <= timedelta(0)):
        raise ConfigurationError(f"{cls.__qualname__}.time_limit must be a positive timedelta or None.")


class JobRegistry:
    """Every queue job known to this process, one per queue."""

    def __init__(self) -> None:
        self._jobs: dict[str, type[QueueJob]] = {}

    def register(self, job: type[QueueJob]) -> None:
        """Add a job; a second job for the same queue raises :class:`AlreadyRegistered`."""
        queue = job.message_class.queue_name()
        known = self._jobs.get(queue)
        if known is not None and known.name() != job.name():
            raise AlreadyRegistered(f"Queue {queue!r} has two jobs: {known.name()} and {job.name()}. Keep one.")
        self._jobs[queue] = job

    def get(self, queue: str) -> type[QueueJob]:
        """The job of ``queue``, or :class:`NotRegistered`."""
        try:
            return self._jobs[queue]
        except KeyError:
            known = ", ".join(sorted(self._jobs)) or "none"
            raise NotRegistered(f"No job processes queue {queue!r}. Queues with jobs: {known}.") from None

    def __contains__(self, queue: object) -> bool:
        """Does a job process ``queue``?"""
        return queue in self._jobs

    def __iter__(self) -> Iterator[type[QueueJob]]:
        return iter(sorted(self._jobs.values(), key=lambda j: j.message_class.queue_name()))

    def __len__(self) -> int:
        return len(self._jobs)


jobs = JobRegistry()
