"""Message classes: each concrete subclass of :class:`QueueMessage` is a queue."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from django.db import connections
from django.db.models import QuerySet
from pydantic import BaseModel, ConfigDict, ValidationError

from .exceptions import ConfigurationError, InvalidMessage, InvalidStatus, MessageDoesNotFit, UnstorableValue
from .flow_limits import OPTION_NAMES as FLOW_LIMIT_OPTIONS
from .flow_limits import FlowLimits, flow_limits
from .limits import unstorable_text
from .models import JobRun, QueueItem, QueueItemQuerySet, QueueSettings, QueueSettingsQuerySet, create_queue_model
from .registry import registry
from .status import HealthStatus, Status, validate_status

QUEUE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
MAX_MESSAGE_ID_LENGTH = 255
MAX_VERBOSE_NAME_LENGTH = 80


@dataclass(frozen=True)
class QueueOptions:
    """A queue's validated class keywords."""

    queue: str
    idempotent: bool = False
    keep_processed_for: timedelta | None = timedelta(0)
    """How long Processed messages stay; ``timedelta(0)`` deletes them, ``None`` keeps them."""
    category: str = ""
    verbose_name: str = ""
    """The queue's name in words for people (the admin); "" derives it from the queue name."""
    health_status_when_errors: HealthStatus = HealthStatus.UNHEALTHY
    health_check: bool = True
    health_max_pending: int | None = None
    """The health check turns unhealthy when more messages than this are Pending (None: no limit)."""
    health_max_pending_age: timedelta | None = None
    """The health check turns unhealthy when a message has waited Pending longer than this (None: no limit)."""
    health_needs_worker: bool = True
    """The health check turns unhealthy when Pending messages have no job, or no live worker (Sleeping ones no live
    dispatch loop) for longer than ``HEALTH_NO_WORKER_GRACE``; False for a queue run only in bursts or by own code."""
    database: str = "default"
    default_status: str = Status.PENDING
    limits: FlowLimits = field(default_factory=FlowLimits)
    """The concurrency and rate limits every worker's claim keeps to (class keywords ``concurrency_limit``,
    ``concurrency_key``, ``rate_limit``, ``rate_key``)."""
    name_derived: bool = False
    """True when the queue name comes from the class name (renaming it makes a new queue)."""

    @property
    def title(self) -> str:
        """The queue's name as people read it: ``verbose_name``, else ``send_order_confirmation`` ->
        "Send order confirmation"."""
        return self.verbose_name or self.queue.replace("_", " ").capitalize()

    @property
    def keeps_processed(self) -> bool:
        """Are Processed messages kept (for a while or forever) rather than deleted?"""
        return self.keep_processed_for is None or self.keep_processed_for > timedelta(0)


_UNSET: Any = object()
_OPTION_NAMES = frozenset(QueueOptions.__dataclass_fields__) - {"name_derived", "limits"} | set(FLOW_LIMIT_OPTIONS)


def queue_name_from_class(class_name: str) -> str:
    """``SendOrderConfirmation`` -> ``send_order_confirmation``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", class_name).lower()


def _options(cls: type, identity: bool, **kwargs: Any) -> QueueOptions:
    unknown = set(kwargs) - _OPTION_NAMES
    if unknown:
        raise ConfigurationError(f"{cls.__qualname__}: unknown queue option(s) {', '.join(sorted(unknown))}.")
    name_derived = not kwargs.get("queue")
    name = kwargs.pop("queue", None) or queue_name_from_class(cls.__name__)
    if not isinstance(name, str) or not QUEUE_NAME.match(name):
        raise ConfigurationError(
            f"{cls.__qualname__}: queue name {name!r} must be 1-40 characters of lowercase letters, "
            "digits and '_', starting with a letter."
        )
    idempotent = kwargs.pop("idempotent", False)
    if idempotent and not identity:
        raise ConfigurationError(
            f"{cls.__qualname__}: idempotent=True needs message identity: derive from QueueMessageWithId."
        )
    keep = kwargs.pop("keep_processed_for", _UNSET)
    if keep is _UNSET:
        keep = None if idempotent else timedelta(0)
    if keep is not None and (not isinstance(keep, timedelta) or keep < timedelta(0)):
        raise ConfigurationError(
            f"{cls.__qualname__}: keep_processed_for must be a non-negative timedelta or None (forever)."
        )
    database = kwargs.pop("database", "default")
    if database not in connections.settings:
        raise ConfigurationError(f"{cls.__qualname__}: database {database!r} is not in settings.DATABASES.")
    try:
        default_status = validate_status(kwargs.pop("default_status", Status.PENDING))
    except InvalidStatus as exc:
        raise ConfigurationError(f"{cls.__qualname__}: default_status: {exc}") from exc
    if default_status in (Status.LEASED, Status.SLEEPING):
        raise ConfigurationError(f"{cls.__qualname__}: default_status cannot be {default_status}.")
    try:
        health = HealthStatus(kwargs.pop("health_status_when_errors", HealthStatus.UNHEALTHY))
    except ValueError as exc:
        raise ConfigurationError(
            f"{cls.__qualname__}: health_status_when_errors must be one of "
            f"{', '.join(h.value for h in HealthStatus)}."
        ) from exc
    return QueueOptions(
        **_health_thresholds(cls, kwargs),
        queue=name, idempotent=bool(idempotent), keep_processed_for=keep, database=database,
        default_status=default_status, health_status_when_errors=health,
        category=str(kwargs.pop("category", "") or ""), verbose_name=_verbose_name(cls, kwargs),
        health_check=bool(kwargs.pop("health_check", True)),
        health_needs_worker=_flag(cls, "health_needs_worker", kwargs.pop("health_needs_worker", True)),
        limits=flow_limits(cls, set(getattr(cls, "model_fields", {})), kwargs), name_derived=name_derived,
    )


def _verbose_name(cls: type, kwargs: dict[str, Any]) -> str:
    name = kwargs.pop("verbose_name", "")
    if not isinstance(name, str) or name != name.strip() or len(name) > MAX_VERBOSE_NAME_LENGTH:
        raise ConfigurationError(
            f"{cls.__qualname__}: verbose_name must be text of at most {MAX_VERBOSE_NAME_LENGTH} characters "
            "without leading or trailing spaces."
        )
    return name


def _flag(cls: type, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{cls.__qualname__}: {name} must be True or False, got {value!r}.")
    return value


def _health_thresholds(cls: type, kwargs: dict[str, Any]) -> dict[str, Any]:
    count = kwargs.pop("health_max_pending", None)
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise ConfigurationError(f"{cls.__qualname__}: health_max_pending must be a non-negative int or None.")
    age = kwargs.pop("health_max_pending_age", None)
    if age is not None and (not isinstance(age, timedelta) or age <= timedelta(0)):
        raise ConfigurationError(f"{cls.__qualname__}: health_max_pending_age must be a positive timedelta or None.")
    return {"health_max_pending": count, "health_max_pending_age": age}


class QueueMessage(BaseModel):
    """Base of message classes; each concrete subclass is one queue with its own table.

    Class keywords: ``queue``, ``idempotent``, ``keep_processed_for``, ``category``, ``verbose_name``,
    ``health_status_when_errors``, ``health_check``, ``health_max_pending``, ``health_max_pending_age``,
    ``health_needs_worker``, ``database``, ``default_status``, ``concurrency_limit``, ``concurrency_key``,
    ``rate_limit``, ``rate_key`` (the flow-control guide),
    ``abstract`` (a base with shared fields, no queue).
    """

    # JSON has no NaN or infinities: typed float fields refuse them, and untyped ones keep them
    # (rather than dump them as null) so that canonical_json refuses them too.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, ser_json_inf_nan="constants")

    has_identity: ClassVar[bool] = False
    queue_options: ClassVar[QueueOptions]
    queue_model: ClassVar[type[QueueItem]]
    """The Django model of the queue's table (made with the class)."""
    queue_item_base: ClassVar[type[QueueItem]] = QueueItem  # type: ignore[type-abstract]
    """The abstract model the queue's table derives from: another one adds columns (a task queue's results)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Accept the queue keywords; the queue is made once pydantic has built the class."""

    @classmethod
    def __pydantic_init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__()
        if abstract:
            if kwargs:
                raise ConfigurationError(f"{cls.__qualname__}: an abstract message class takes no queue options.")
            return
        if cls.has_identity and "message_id" not in cls.model_fields and not isinstance(
            getattr(cls, "message_id", None), property
        ):
            raise ConfigurationError(
                f"{cls.__qualname__}: a QueueMessageWithId needs a message_id property or field."
            )
        cls.queue_options = _options(cls, cls.has_identity, **kwargs)
        registry.register(cls)
        try:
            cls.queue_model = create_queue_model(cls)
        except Exception:
            registry.unregister(cls.queue_name())
            raise

    @classmethod
    def queue_name(cls) -> str:
        """The queue's name (also the table name after ``nexus_``)."""
        return cls.queue_options.queue

    @classmethod
    def queue_items(cls) -> QueueItemQuerySet:
        """The queue's rows, on the queue's database: the one way to reach them."""
        return cls.queue_model.objects.using(cls.queue_options.database)

    @classmethod
    def queue_settings(cls) -> QueueSettingsQuerySet:
        """The queue's run-time settings row (none until an operator changes one), on the queue's database."""
        return QueueSettings.objects.using(cls.queue_options.database).filter(queue=cls.queue_name())

    @classmethod
    def job_runs(cls) -> QuerySet[JobRun]:
        """The runs of the queue's jobs, on the queue's database, where the worker records them."""
        return JobRun.objects.using(cls.queue_options.database).filter(queue=cls.queue_name())

    @classmethod
    def from_stored(cls, data: Any, *, queue_item: Any = None) -> QueueMessage:
        """Validate stored JSON data; raise :class:`MessageDoesNotFit` naming the row if it fails."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            row_id = getattr(queue_item, "pk", None)
            raise MessageDoesNotFit(cls.queue_name(), row_id, validation_summary(exc)) from exc


def validation_summary(exc: ValidationError) -> str:
    """A one-line account of pydantic validation errors, each naming its field."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(message)'}: {err['msg']}" for err in exc.errors()
    )


class QueueMessageWithId(QueueMessage, abstract=True):
    """A message with identity: a new version replaces the stored one with the same ``message_id``."""

    has_identity: ClassVar[bool] = True

    if TYPE_CHECKING:

        @property
        def message_id(self) -> str: ...


def message_id_of(message: QueueMessage) -> str | None:
    """The message's id as stored, or None for a queue without identity."""
    if not message.has_identity:
        return None
    value = message.message_id  # type: ignore[attr-defined]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise InvalidMessage(f"{type(message).__qualname__}.message_id must be non-empty text, got {value!r}.")
    if len(value) > MAX_MESSAGE_ID_LENGTH:
        raise InvalidMessage(f"{type(message).__qualname__}.message_id is longer than {MAX_MESSAGE_ID_LENGTH}.")
    problem = unstorable_text(value)
    if problem:
        raise UnstorableValue(f"{type(message).__qualname__}.message_id", problem)
    return value
