"""The outbox: a queue job that publishes its queue's messages to RabbitMQ, done only once the broker confirmed.

Each message goes through the delay levels (see :mod:`.delays`) to its destination on a channel in
confirm mode, mandatory; a run's messages are sent together and their confirms awaited together
(:mod:`.pipeline`). A confirmed message is Processed in the run's acknowledgement; one the broker
refuses or cannot route, and every unconfirmed one once the connection is lost, fail and are retried
per ``max_attempts`` and ``backoff``, then set to Error: never lost, never done unconfirmed.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

import pika

from nexus_queues.exceptions import ConfigurationError, NotPublished
from nexus_queues.jobs.queue_jobs import Outcome, QueueJob
from nexus_queues.serialization import canonical_json

from . import delays
from .conf import settings
from .connections import BROKER_ERRORS
from .pipeline import Pipeline, Send, Unconfirmed

if TYPE_CHECKING:
    from nexus_queues.models import QueueItem


SOURCE_HEADER = "x-nexus-queue"
"""The header naming the nexus queue a published message came from."""


_local = threading.local()  # pika's connections are not thread-safe: one per worker thread


class RabbitMQPublishJob(QueueJob, abstract=True):
    """Publishes each message of ``message_class``'s queue to the AMQP queue ``destination``, after its delay.

    Body: the message's JSON as the queue stores it (``application/json``), persistent. Properties:
    ``message_id`` (the message's id, or ``<queue>:<row id>`` for a queue without identity),
    ``correlation_id`` (the run's), and the header ``x-nexus-queue`` naming the source queue.

    Delivery is at least once. A duplicate is possible in two windows: the broker confirmed but the
    worker died before its acknowledgement committed (the lease expires, the row becomes Abandoned,
    and an operator who retries it publishes it again); or the connection broke after the broker
    took messages but before their confirms arrived (they are retried: up to a batch of them, since a
    run's confirms are awaited together). Either way the consumer sees the same ``message_id`` twice,
    so consumers should deduplicate on it.

    The broker cannot refuse a delayed message for want of a route (its first delay level takes it), so
    one is sent only when the destination queue exists; a queue that exists but is not bound to the
    delivery exchange, or is deleted during the delay, still loses delayed messages at the end of it.
    """

    destination: ClassVar[str]
    """The AMQP queue the messages go to, bound with ``bind_endpoint`` or ``nexus_rabbitmq_setup --endpoint``."""
    delay: ClassVar[timedelta] = timedelta(0)
    """The delay of every message, unless :meth:`delay_for` says otherwise; whole seconds, rounded up."""
    max_attempts: ClassVar[int] = 10
    """Ten runs with the backoff doubling from 30 s ride out a broker outage of about four hours."""
    _destination_exists: bool | None = None

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        if not abstract:
            _validate(cls)
        super().__init_subclass__(abstract=abstract, **kwargs)

    def delay_for(self, message: Any) -> timedelta | float:
        """How long the broker holds ``message`` before it reaches the destination (default: :attr:`delay`)."""
        return self.delay

    def process_batch(self, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
        """Publish the items, then wait for their confirms together; a lost connection fails every unconfirmed one."""
        try:
            pipeline = _pipeline(self.name())
            sends = [(item.pk, *self.message(item, pipeline)) for item in items]
        except BROKER_ERRORS as exc:
            disconnect()
            failure = _not_published(f"The broker at {_where()} cannot be reached", exc)
            return {item.pk: failure for item in items}
        results = pipeline.publish(sends)
        if pipeline.failure is not None:
            disconnect()
        return {pk: self._outcome(error) for pk, error in results.items() if error is not None}

    def message(self, item: QueueItem, pipeline: Pipeline) -> tuple[str, Send]:
        """The AMQP message id of ``item``, and how to publish it on a channel."""
        queue = self.message_class.queue_name()
        message_id = item.message_id or f"{queue}:{item.pk}"
        properties = pika.BasicProperties(
            content_type="application/json", message_id=message_id, correlation_id=item.correlation_id
        )

        def send(channel: Any) -> None:
            delay = self.delay_for(item.message)
            if delays.delay_seconds(delay):
                self._check_destination(pipeline)
            delays.publish(
                channel, canonical_json(item.message), self.destination, delay=delay,
                headers={SOURCE_HEADER: queue}, properties=properties,
            )

        return message_id, send

    def _outcome(self, error: BaseException) -> BaseException:
        if isinstance(error, pika.exceptions.UnroutableError | pika.exceptions.NackError):
            return _refused(self.destination, error)
        if isinstance(error, Unconfirmed):
            seconds = f"{settings.CONFIRM_TIMEOUT.total_seconds():g}"
            return _not_published(f"The broker at {_where()} sent no confirm within {seconds} s (it may have "
                                  "taken the message: a retry publishes it again)", error)
        if isinstance(error, BROKER_ERRORS):
            return _not_published(f"The broker at {_where()} closed the channel, or the connection broke", error)
        return error

    def _check_destination(self, pipeline: Pipeline) -> None:
        # The delay levels confirm a delayed message whatever its destination, and drop it when its delay ends
        # if no queue takes it then: so the destination must exist before one is sent. Once per run (a job
        # instance is one run).
        if self._destination_exists is None:
            self._destination_exists = pipeline.queue_exists(self.destination)
        if not self._destination_exists:
            raise NotPublished(
                f"The destination queue {self.destination!r} does not exist, and the delay levels would drop "
                "a delayed message at the end of its delay: declare and bind it with bind_endpoint or "
                "nexus_rabbitmq_setup --endpoint. Not published."
            )


def disconnect() -> None:
    """Close this thread's publishing connection, if it has one; the next run opens a new one."""
    pipeline: Pipeline | None = getattr(_local, "pipeline", None)
    _local.pipeline = None
    if pipeline is not None:
        pipeline.close()


def _pipeline(job_name: str) -> Pipeline:
    """This thread's pipeline, re-opened when the URL changed or the broker closed it meanwhile."""
    pipeline: Pipeline | None = getattr(_local, "pipeline", None)
    if pipeline is not None and pipeline.url == settings.URL and pipeline.usable:
        return pipeline
    disconnect()
    name = f"nexus_queues {job_name} {socket.gethostname()}:{os.getpid()} {threading.current_thread().name}"
    _local.pipeline = Pipeline(settings.URL, name)
    return _local.pipeline


def _where() -> str:
    """The broker's address without its credentials, for error messages."""
    parameters = pika.URLParameters(settings.URL)
    return f"{parameters.host}:{parameters.port}"


def _not_published(what: str, exc: BaseException) -> NotPublished:
    # pika's errors keep their detail in repr() only; their str() is often empty.
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else repr(exc)
    failure = NotPublished(f"{what}: {detail}. Not published.")
    failure.__cause__ = exc
    return failure


def _refused(destination: str, exc: BaseException) -> NotPublished:
    if isinstance(exc, pika.exceptions.UnroutableError):
        reason = (f"No queue is bound for destination {destination!r}: bind it with bind_endpoint "
                  "or nexus_rabbitmq_setup --endpoint")
    else:
        reason = f"The broker refused the message for destination {destination!r} (nack)"
    return _not_published(reason, exc)


def _validate(cls: type[RabbitMQPublishJob]) -> None:
    try:
        delays.check_destination(getattr(cls, "destination", None))  # type: ignore[arg-type]
    except ConfigurationError as exc:
        raise ConfigurationError(f"{cls.__qualname__}.destination: {exc}") from exc
    try:
        delays.delay_seconds(cls.delay)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{cls.__qualname__}.delay: {exc}") from exc
