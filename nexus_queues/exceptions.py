"""Every error nexus_queues raises derives from :class:`NexusQueuesError`."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured


class NexusQueuesError(Exception):
    """Base class of every nexus_queues error."""


class ConfigurationError(NexusQueuesError, ImproperlyConfigured):
    """A queue or setting is configured wrongly; the message says how to fix it."""


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


class NotMigrated(ConfigurationError):
    """The database lacks tables the worker needs: run ``manage.py migrate``."""


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
