"""The shapes of the API's requests and answers (also its OpenAPI description)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from django.utils import timezone
from ninja import Schema
from pydantic import BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..exceptions import UnstorableValue
from ..limits import after, check_datetime
from ..status import HealthStatus, validate_settable_status, validate_status

JsonScalar = str | int | float | bool | None
MAX_ID = 2**63 - 1
RowId = Annotated[int, Field(ge=1, le=MAX_ID)]


def _seconds(value: Any) -> Any:
    # Query strings arrive as text; pydantic reads "300" as a malformed ISO duration, not seconds.
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        return value


Delay = Annotated[timedelta, BeforeValidator(_seconds)]


class Error(Schema):
    """An error: a sentence, or a list of field errors (each with ``loc`` and ``msg``)."""

    detail: str | list[dict[str, Any]]


class Health(Schema):
    """A queue's health and why."""

    status: HealthStatus
    reasons: list[str]


class Queue(Schema):
    """A queue, its counts per status, its health and its run-time settings."""

    name: str
    category: str
    has_identity: bool
    idempotent: bool
    counts: dict[str, int]
    health: Health
    default_status: str
    processing_enabled: bool


def _storable_time(check: Callable[[], object]) -> None:
    """The core's time range check, its refusal as a validation error of the query field."""
    try:
        check()
    except UnstorableValue as exc:
        raise ValueError(str(exc)) from None


class EnqueueOptions(Schema):
    """Query options of ``POST /queues/{name}``."""

    at: datetime | None = None
    delay: Delay | None = Field(None, description="Seconds or an ISO 8601 duration, e.g. PT5M.")
    status: str | None = None
    expires_at: datetime | None = Field(None, description="Workers skip the message after this time.")
    start_processing: bool = False

    @field_validator("status")
    @classmethod
    def _settable(cls, value: str | None) -> str | None:
        return None if value is None else validate_settable_status(value)

    @field_validator("at", "expires_at")
    @classmethod
    def _storable(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if value is not None:
            _storable_time(lambda: check_datetime(str(info.field_name), value))
        return value

    @field_validator("delay")
    @classmethod
    def _reachable(cls, value: timedelta | None) -> timedelta | None:
        if value is not None:
            _storable_time(lambda: after(timezone.now(), value))
        return value


class Placed(Schema):
    """One message of the request: its position in the request, its id (queues with identity) and its row's id."""

    index: int
    message_id: str | None
    id: int | None = Field(None, description="The row id of a stored message: /queues/{name}/messages/{id}.")


class Enqueued(Schema):
    """What an enqueue did with each message of the request."""

    stored: list[Placed]
    discarded: list[Placed] = Field(description="Idempotent duplicates of what was already stored.")
    superseded: list[Placed] = Field(description="Earlier versions of an id replaced later in the same request.")


LAST_ERROR = (
    "The last failed attempt's {} ('' when none). The current error only while status is Error: a retry "
    "(Pending again) keeps it as the last error until the message is processed or fails again."
)


class Message(Schema):
    """A stored message with everything about it."""

    id: int
    message_id: str | None
    status: str
    message: Any
    previous_message: Any
    headers: dict[str, Any]
    process_at: datetime | None
    expires_at: datetime | None
    lease_expires_at: datetime | None
    correlation_id: str | None
    attempts: int
    error_type: str = Field(description=LAST_ERROR.format("exception's dotted type"))
    error_message: str = Field(description=LAST_ERROR.format("exception's message"))
    error_traceback: str = Field(description=LAST_ERROR.format("traceback"))
    created_at: datetime
    updated_at: datetime
    processed_at: datetime | None


class MessagePage(Schema):
    """Messages in id order; pass ``next_cursor`` as ``cursor`` for the next page (None: no more)."""

    items: list[Message]
    next_cursor: int | None


class _Input(Schema):
    model_config = ConfigDict(extra="forbid")


class NewStatus(_Input):
    """The status to set (any but Leased and Sleeping)."""

    status: str

    @field_validator("status")
    @classmethod
    def _settable(cls, value: str) -> str:
        return validate_settable_status(value)


class StatusChange(NewStatus):
    """Set ``status`` on the messages with these ``ids``, or on every message matching
    ``current_status`` and ``filter`` (property filters, see the README)."""

    ids: list[RowId] | None = Field(None, max_length=10_000)
    current_status: str | None = None
    filter: dict[str, JsonScalar] | None = Field(
        None, description="Property filters as in GET /queues/{name}/messages, e.g. {\"quantity__gte\": 5}."
    )

    @field_validator("current_status")
    @classmethod
    def _valid(cls, value: str | None) -> str | None:
        return None if value is None else validate_status(value)

    @model_validator(mode="after")
    def _one_selection(self) -> StatusChange:
        by_match = self.current_status is not None or self.filter is not None
        if (self.ids is None) == (not by_match):
            raise ValueError("Give ids, or current_status and/or filter (filter {} matches every message), not both.")
        return self


class CancelRequest(_Input):
    """Cancel the Pending, Sleeping and Leased messages among these ``ids``."""

    ids: list[RowId] = Field(..., min_length=1, max_length=10_000)


class Cancelled(Schema):
    """The ids cancelled, in id order; the others were in another status, or not there."""

    cancelled: list[int]


class Changed(Schema):
    """How many messages changed."""

    changed: int


class QueueSettings(Schema):
    """A queue's run-time settings."""

    default_status: str
    processing_enabled: bool


class QueueSettingsChange(_Input):
    """The run-time settings to change; omitted ones stay as they are."""

    default_status: str | None = None
    processing_enabled: bool | None = None

    @field_validator("default_status")
    @classmethod
    def _settable(cls, value: str | None) -> str | None:
        return None if value is None else validate_settable_status(value)


class JobRun(Schema):
    """One run of a job; its correlation id finds its lines in the worker's logs."""

    started_at: datetime
    finished_at: datetime | None
    outcome: Literal["succeeded", "partly-failed", "failed", "unfinished"] = Field(
        description="partly-failed: some messages failed, others were processed; unfinished: still running, or its "
                    "worker died."
    )
    correlation_id: str


class Job(Schema):
    """A job, queue or periodic: its schedule in words, whether it is on, its next and last run."""

    name: str = Field(description="The job's dotted path.")
    kind: Literal["queue", "periodic"]
    queue: str | None = Field(description="The queue it processes (null for a periodic job).")
    category: str
    schedule: str = Field(description='In words: "Every 5 minutes", "At 03:00 every day (Europe/Stockholm)", '
                                      '"Continuously".')
    enabled: bool
    next_run: datetime | None = Field(description="The next tick (null for a continuous or switched-off job).")
    last_run: JobRun | None
    last_outcome: Literal["succeeded", "partly-failed", "failed", "unfinished", ""] = Field(
        description="Empty before the first run."
    )


class JobChange(_Input):
    """Switch the job on or off."""

    enabled: bool


class Batch(Schema):
    """A batch of a queue's messages and its progress; ``completed_at`` is set once every message has finished
    (Processed, Error or Cancelled), when its completion message was enqueued."""

    id: int
    queue: str
    label: str
    total: int
    pending: int = Field(description="Messages not finished yet: waiting, sleeping, leased, abandoned or custom.")
    processed: int
    error: int
    cancelled: int
    created_at: datetime
    completed_at: datetime | None
