"""Where a body the consumer cannot store goes: the queue ``<from>.invalid``, or back to the broker rejected."""

from __future__ import annotations

import copy

import pika
from pika.adapters.blocking_connection import BlockingChannel

from nexus_queues.exceptions import InvalidMode

from .bodies import Delivery

DEAD_LETTER = "dead-letter"
REJECT = "reject"
MODES = (DEAD_LETTER, REJECT)
"""The values of the ``INVALID_MESSAGES`` setting."""

REASON_HEADER = "x-nexus-invalid-reason"
"""Why the body was refused: not JSON, or the message class's validation errors."""
SOURCE_HEADER = "x-nexus-source-queue"
"""The AMQP queue it was consumed from."""
QUEUE_HEADER = "x-nexus-queue"
"""The nexus queue it was meant for."""
EXCHANGE_HEADER = "x-nexus-original-exchange"
ROUTING_KEY_HEADER = "x-nexus-original-routing-key"


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`; :class:`InvalidMode` naming them otherwise."""
    if mode not in MODES:
        raise InvalidMode(f"NEXUS_RABBITMQ['INVALID_MESSAGES'] is {mode!r}; use one of {', '.join(MODES)}.")
    return mode


def invalid_queue(source: str) -> str:
    """The queue that keeps what was refused from ``source``."""
    return f"{source}.invalid"


def declare_invalid_queue(channel: BlockingChannel, source: str) -> None:
    """Declare ``<source>.invalid``, durable; idempotent."""
    channel.queue_declare(invalid_queue(source), durable=True)


def dead_letter(channel: BlockingChannel, delivery: Delivery, reason: str, source: str, queue: str) -> None:
    """Publish ``delivery`` to ``<source>.invalid``, persistent, its properties kept and headers saying why.

    Returns once the broker has taken it when ``channel`` is in confirm mode.
    """
    properties = copy.copy(delivery.properties)
    properties.delivery_mode = pika.DeliveryMode.Persistent.value
    properties.headers = {
        **(properties.headers or {}),
        REASON_HEADER: reason,
        SOURCE_HEADER: source,
        QUEUE_HEADER: queue,
        EXCHANGE_HEADER: delivery.exchange,
        ROUTING_KEY_HEADER: delivery.routing_key,
    }
    channel.basic_publish("", invalid_queue(source), delivery.body, properties, mandatory=True)


def reject(channel: BlockingChannel, delivery: Delivery) -> None:
    """Reject ``delivery`` without requeueing: the broker dead-letters it by the queue's own arguments, or drops it."""
    channel.basic_reject(delivery.tag, requeue=False)
