"""What an AMQP delivery's body becomes: a message of the nexus queue's class, or the reason it cannot be one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import pika
from pydantic import ValidationError

from nexus_queues.enqueueing import check_size
from nexus_queues.messages import QueueMessage, message_id_of, validation_summary

MAX_REASON_LENGTH = 1000
"""Characters of a reason kept in a header and a log record: a huge body's errors cannot bloat either."""


class Delivery(NamedTuple):
    """One message the broker delivered, not yet acknowledged."""

    tag: int
    body: bytes
    properties: pika.BasicProperties
    exchange: str
    routing_key: str
    redelivered: bool = False
    """The broker delivered it before, to this consumer or another, and it was not acknowledged."""


class Sorted(NamedTuple):
    """A batch's deliveries: those that are messages of the queue, and those that are not with the reason."""

    valid: list[tuple[Delivery, QueueMessage]]
    invalid: list[tuple[Delivery, str]]


def message_from(body: bytes, message_class: type[QueueMessage]) -> QueueMessage:
    """``body`` (JSON) as a message of ``message_class``, storable on every engine.

    ``ValueError`` (or ``TypeError`` for a value the class cannot make JSON again) says why not.
    """
    try:
        message = message_class.model_validate_json(body)
    except ValidationError as exc:
        raise ValueError(validation_summary(exc)) from exc
    message_id_of(message)  # a message id enqueue would refuse
    check_size(message)  # a value not every engine stores (NUL, lone surrogates, ...), or too large for its database
    return message


def sort_deliveries(deliveries: Sequence[Delivery], message_class: type[QueueMessage]) -> Sorted:
    """Each delivery validated by ``message_class``; one bad body never holds back the others."""
    result = Sorted([], [])
    for delivery in deliveries:
        try:
            result.valid.append((delivery, message_from(delivery.body, message_class)))
        except (ValueError, TypeError) as exc:
            result.invalid.append((delivery, str(exc)[:MAX_REASON_LENGTH]))
    return result
