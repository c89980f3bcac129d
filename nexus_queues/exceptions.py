"""Every error nexus_queues raises derives from :class:`NexusQueuesError`; those of a misconfiguration also derive
from Django's ``ImproperlyConfigured`` (through :class:`ConfigurationError`)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from .contrib.spark.models import Sync


class NexusQueuesError(Exception):
    """Base class of every nexus_queues error."""

    def __init__(self, *args: object) -> None:
        # Raised bare, an error says what its docstring's first paragraph says.
        super().__init__(*(args or (inspect.cleandoc(type(self).__doc__ or "").split("\n\n")[0].replace("\n", " "),)))


class ConfigurationError(NexusQueuesError, ImproperlyConfigured):
    """A queue or setting is configured wrongly; the message says how to fix it."""


class MissingExtra(ConfigurationError):
    """A part of nexus_queues is used without the pyproject extra that installs its library."""


class AlreadyRegistered(ConfigurationError):
    """Two message classes claim the same queue name."""


class NotRegistered(NexusQueuesError, LookupError):
    """No queue is registered under that name."""


class InvalidStatus(NexusQueuesError, ValueError):
    """A status is not a valid built-in or custom status."""


class InvalidArgument(NexusQueuesError, ValueError):
    """An argument is out of range or of the wrong type (``count``, ``lease_time``, ``delay``, ``at``, ``headers``)."""


class InvalidMessage(NexusQueuesError, ValueError):
    """A message cannot be enqueued as given (wrong type, missing id, mixed queues)."""


class UnstorableValue(InvalidMessage):
    """A value that not every engine stores and reads back (a time out of range, NaN, NUL, nesting too deep).

    ``field`` names the value (``at``, ``Audit.details.x``, ``headers.trace``), ``problem`` says what is wrong,
    ``index`` is the message's position in an ``enqueue_many`` batch (None for one message).
    """

    def __init__(self, field: str, problem: str, index: int | None = None) -> None:
        self.field, self.problem, self.index = field, problem, index
        super().__init__(f"{field}: {problem}" if index is None else f"message {index}: {field}: {problem}")


class MessageDoesNotFit(NexusQueuesError, ValueError):
    """A stored message's JSON no longer validates against its message class.

    The row is left as it is; fix the JSON (admin, API) or the class.
    """

    def __init__(self, queue: str, row_id: int | None, errors: str) -> None:
        self.queue, self.row_id, self.errors = queue, row_id, errors
        super().__init__(f"Message {row_id} of queue {queue!r} does not fit its class: {errors}")


class InvalidLookup(NexusQueuesError, ValueError):
    """A status-update filter names a field or lookup the queue table does not have."""


class UnreadableRow(NexusQueuesError, ValueError):
    """A stored row holds a value Python cannot read, e.g. a timestamp outside the years 1 to 9999 written by
    raw SQL; the worker and the dispatch loop set such rows to Error with this type and say which column."""


class DatabaseUnavailable(NexusQueuesError):
    """The database kept failing for WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER: a burst worker gives up, exit status 1."""


class DrainDidNotEnd(NexusQueuesError):
    """A test's :func:`~nexus_queues.testing.drain` still found messages Pending after its ``max_runs`` runs.

    ``queue`` and ``max_runs`` say which and how many: a job that enqueues into its own queue at every run never
    lets it empty.
    """

    def __init__(self, queue: str, max_runs: int) -> None:
        self.queue, self.max_runs = queue, max_runs
        super().__init__(
            f"Queue {queue!r} still has Pending messages after {max_runs} runs of its job: does the job enqueue "
            "into its own queue every time? Pass a larger max_runs if it is meant to take longer."
        )


class WrongWakeupDatabase(ConfigurationError):
    """A ``WAKEUP_DATABASES`` alias reaches another database than the alias it stands for (another server's, of the
    same name): wake-ups would be listened for, and session locks held, there."""


class NotMigrated(ConfigurationError):
    """The database lacks tables the worker needs: run ``manage.py migrate``."""


class DatabaseRefused(ConfigurationError):
    """The database server refuses the connection's settings (a database that does not exist, credentials it does not
    take): fix ``DATABASES``; waiting does not mend it."""


class MessageTooLarge(InvalidMessage):
    """A message takes more bytes than its database takes in one statement; nothing is stored for it.

    ``size`` is what its row takes, ``limit`` what a statement may carry, ``engine_limit`` the engine's setting it
    comes from (``max_allowed_packet 16777216``), ``index`` the message's position in a batch (None for one).
    """

    def __init__(self, size: int, limit: int, engine_limit: str, index: int | None = None) -> None:
        self.size, self.limit, self.engine_limit, self.index = size, limit, engine_limit, index
        which = "The message" if index is None else f"Message {index}"
        super().__init__(
            f"{which} takes {size:,} bytes in a statement; the database takes at most {limit:,} ({engine_limit})."
        )


class ResultTooLarge(NexusQueuesError, ValueError):
    """A task's return value is larger than a result may be (``TASK_RESULT_MAX_BYTES``, or what the database
    takes in one statement): the task fails, and its result is not stored."""

    def __init__(self, size: int, limit: int, reason: str) -> None:
        self.size, self.limit = size, limit
        super().__init__(f"The return value takes {size:,} bytes; a task result may take at most {limit:,} ({reason}).")


class StreamCheckpointChanged(ConfigurationError):
    """A Spark stream started from a new checkpoint under a name whose batches another checkpoint recorded.

    Its batch ids start again from 0 and would be taken for replays of the recorded ones and skipped: it
    stores nothing instead. ``stream`` is the name.
    """

    def __init__(self, stream: str) -> None:
        self.stream = stream
        super().__init__(
            f"Stream {stream!r} has batches recorded from another checkpoint, and this one is a new checkpoint "
            f"(its batch ids start again from 0): nothing was stored. Give the stream a new name, "
            f'.option("stream", "<new name>"), or, to reuse the name, delete the Sync records of '
            f"stream {stream!r} first."
        )


# Jobs and schedules


class InvalidSchedule(ConfigurationError):
    """A job's schedule is not a cron expression, an interval from one second to 100 years, or names an unknown
    time zone."""


class JobSwitchedOff(NexusQueuesError):
    """A switched-off job is not started: switch it on first."""


# Input from people: JSON text, the HTTP API, the admin


class TimeLimitExceeded(NexusQueuesError):
    """Processing a message ran past its job's ``time_limit`` and was stopped.

    Raised inside the job's code where it was interrupted, so that its traceback shows where it was; a job may
    catch it to clean up, and the worker settles the message all the same once the limit's grace has passed.
    """


class MessageCancelled(NexusQueuesError):
    """The message being processed was cancelled: its job stopped at :meth:`QueueJob.check_cancelled`."""


class MalformedJSON(NexusQueuesError, ValueError):
    """Text that is not strict JSON (RFC 8259), or that holds text no engine stores; the message says where."""


class BadFilter(NexusQueuesError, ValueError):
    """A filter key or value the API cannot turn into a lookup; the message names it, ``key`` holds it."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class BodyTooLarge(NexusQueuesError):
    """The request body is larger than the API reads."""


class RowMoved(NexusQueuesError):
    """The row changed since the form showed it (a worker leased, processed or deleted it); nothing was written."""


# Spark


class SyncFailed(NexusQueuesError):
    """The sync failed and stored nothing; :attr:`record` says why."""

    def __init__(self, record: Sync, reason: str) -> None:
        self.record = record
        super().__init__(f"Sync #{record.pk} into {record.queue} failed, nothing was stored: {reason}")


class TooManyRejects(NexusQueuesError):
    """More rows were rejected than the sync's ``max_rejects`` allows: nothing was stored."""


class NoJvmPath(NexusQueuesError):
    """Spark's JVM cannot reach the database with JDBC (SQLite, a Unix socket, no driver in the session): the Python
    path runs instead, and the message says why."""


class NotCompilable(NexusQueuesError):
    """A message class, or a DataFrame's columns for it, cannot be compiled into Spark SQL (the message names the
    field): its sync takes the Python path."""


# RabbitMQ


class InvalidDelay(ConfigurationError, ValueError):
    """The delay is negative, not a number, or longer than the delay levels can hold."""


class InvalidDestination(ConfigurationError, ValueError):
    """The destination cannot be part of a routing key or a binding."""


class InvalidMode(ConfigurationError, ValueError):
    """``INVALID_MESSAGES`` is neither ``dead-letter`` nor ``reject``."""


class SourceNotFound(ConfigurationError, LookupError):
    """The AMQP queue to consume from does not exist on the broker."""


class TopologyConflict(ConfigurationError):
    """A queue or exchange of that name already exists with other settings; the broker closed the channel.

    ``kind`` (``queue`` or ``exchange``), ``name``, ``wanted`` (what we declared) and ``broker_says`` (the
    broker's reply, which names the argument that differs and both values) say what clashed.
    """

    def __init__(self, kind: str, name: str, wanted: str, broker_says: str) -> None:
        self.kind, self.name, self.wanted, self.broker_says = kind, name, wanted, broker_says
        super().__init__(
            f"The {kind} {name!r} already exists with other settings than the {wanted} declared here: "
            f"{broker_says.removeprefix('PRECONDITION_FAILED - ')}. Nothing was changed. Delete the {kind} "
            "(after moving away any messages it holds) or choose another DELAY_PREFIX."
        )


class NotPublished(NexusQueuesError):
    """The broker did not confirm the message: no queue took it, it refused it, or it could not be reached."""
