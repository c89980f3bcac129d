"""Native delayed delivery in the broker: 28 binary delay levels of topic exchanges and TTL queues.

A delay in whole seconds is written as 28 bits in the routing key, most significant first, then the
destination. Level ``n`` (2^n seconds) is a topic exchange and a queue of the same name: the
exchange routes a key whose bit ``n`` is 1 to its queue, where the message waits for the queue's
TTL of 2^n seconds and is then dead-lettered to level ``n - 1``; a 0 goes to level ``n - 1`` at
once. Below level 0 is the delivery exchange, which endpoints bind with ``#.<endpoint>``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel

from nexus_queues.exceptions import InvalidDelay, InvalidDestination, TopologyConflict

from .conf import settings

LEVELS = 28
"""Delay levels, 2^27 s down to 2^0 s."""

MAX_DELAY = 2**LEVELS - 1
"""The longest delay, in seconds: 268,435,455 (about 8.5 years)."""

MAX_DESTINATION_BYTES = 255 - 2 * LEVELS
"""A routing key holds 255 bytes: what the 28 bits and their dots leave for the destination."""

PRECONDITION_FAILED = 406
"""The broker's reply code to a declaration that contradicts what exists."""


def level_exchange(level: int, prefix: str | None = None) -> str:
    """The name of delay level ``level``'s exchange, which is also its queue's name."""
    return f"{prefix or settings.DELAY_PREFIX}.delay-level-{level:02d}"


def delivery_exchange(prefix: str | None = None) -> str:
    """The name of the exchange every delayed message reaches last, and endpoints bind to."""
    return f"{prefix or settings.DELAY_PREFIX}.delay-delivery"


def delay_seconds(delay: timedelta | float) -> int:
    """``delay`` in whole seconds, rounded up (1.2 s waits 2 s: a delayed message never arrives early)."""
    if isinstance(delay, timedelta):
        seconds: float = delay / timedelta(seconds=1)
    elif isinstance(delay, int | float) and not isinstance(delay, bool):
        seconds = delay
    else:
        raise InvalidDelay(f"A delay is a timedelta or a number of seconds, not {delay!r}.")
    if math.isnan(seconds):
        raise InvalidDelay("A delay cannot be NaN (not a number).")
    if seconds < 0:
        raise InvalidDelay(f"A delay cannot be negative: {delay!r}.")
    if seconds > MAX_DELAY:
        raise InvalidDelay(f"A delay of {delay!r} is longer than the delay levels hold ({MAX_DELAY:,} s).")
    return math.ceil(seconds)


def routing_key(delay: timedelta | float, destination: str) -> str:
    """The routing key of ``destination`` after ``delay``: 28 bits of whole seconds (rounded up), then the name.

    ``routing_key(10, "destination")`` is ``"0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.1.0.destination"``.
    """
    check_destination(destination)
    return ".".join(format(delay_seconds(delay), f"0{LEVELS}b")) + "." + destination


def first_exchange(delay: timedelta | float, prefix: str | None = None) -> str:
    """Where a message with ``delay`` is published: the level of its highest 1 bit, or delivery for none."""
    seconds = delay_seconds(delay)
    return level_exchange(seconds.bit_length() - 1, prefix) if seconds else delivery_exchange(prefix)


def declare_delay_infrastructure(channel: BlockingChannel, prefix: str | None = None) -> None:
    """Declare the 28 delay levels and the delivery exchange, durable; idempotent, safe from many processes.

    Raises :class:`TopologyConflict` when a queue or exchange of one of these names already exists with
    other settings (the broker's PRECONDITION_FAILED, its ``__cause__``); the broker has then closed
    ``channel``, and left what exists as it was.
    """
    below = delivery_exchange(prefix)
    with _conflict("exchange", below, "delivery exchange (topic, durable)"):
        channel.exchange_declare(below, exchange_type="topic", durable=True)
    for level in range(LEVELS):
        name = level_exchange(level, prefix)
        wildcards = "*." * (LEVELS - 1 - level)
        with _conflict("exchange", name, f"delay level {level}'s exchange (topic, durable)"):
            channel.exchange_declare(name, exchange_type="topic", durable=True)
        arguments = _level_queue_arguments(level, below)
        with _conflict("queue", name, f"delay level {level}'s queue (durable, {arguments})"):
            channel.queue_declare(name, durable=True, arguments=arguments)
        channel.queue_bind(name, name, routing_key=f"{wildcards}1.#")
        channel.exchange_bind(destination=below, source=name, routing_key=f"{wildcards}0.#")
        below = name


def _level_queue_arguments(level: int, dead_letter_exchange: str) -> dict[str, Any]:
    # The arguments of NServiceBus's v2 levels, so that prefix nsb.v2 shares (and does not clash with) their
    # queues. Quorum queues dead-letter at least once (a classic queue's expiry may lose a message on the
    # way to the next level), which needs reject-publish overflow; the broker must be 3.10 or later.
    return {
        "x-queue-type": "quorum",
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
        "x-message-ttl": 2**level * 1000,
        "x-dead-letter-exchange": dead_letter_exchange,
    }


def bind_endpoint(channel: BlockingChannel, queue: str, prefix: str | None = None) -> None:
    """Declare the durable queue ``queue`` and bind it to the delivery exchange with ``#.<queue>``.

    The binding matches every key that ends with the name: endpoint ``b`` also receives what is sent
    to ``a.b``, so give endpoints names that do not end in another's.
    """
    check_destination(queue)
    with _conflict("queue", queue, "endpoint queue (durable, no arguments)"):
        channel.queue_declare(queue, durable=True)
    channel.queue_bind(queue, delivery_exchange(prefix), routing_key=f"#.{queue}")


def publish(
    channel: BlockingChannel,
    body: bytes | str,
    destination: str,
    *,
    delay: timedelta | float = 0,
    headers: Mapping[str, Any] | None = None,
    properties: pika.BasicProperties | None = None,
    prefix: str | None = None,
) -> None:
    """Publish ``body`` to ``destination`` after ``delay`` (whole seconds, rounded up), persistent.

    It goes to the first level that holds it, or straight to the delivery exchange when the delay is
    zero. Mandatory: on a channel in confirm mode, a message no queue takes raises
    ``pika.exceptions.UnroutableError``, and one the broker refuses ``NackError``. A delayed message
    is taken by its level's queue whatever its destination: one that no endpoint binds is dropped
    when its delay ends, so bind endpoints (:func:`bind_endpoint`) before sending them delayed messages.
    """
    key = routing_key(delay, destination)
    if delay_seconds(delay) and properties is not None and properties.expiration is not None:
        # A message's own TTL would dead-letter it out of a level's queue before the level's time is up.
        raise InvalidDelay("A delayed message cannot carry its own expiration: it would arrive early.")
    properties = copy.copy(properties) if properties else pika.BasicProperties()
    properties.delivery_mode = pika.DeliveryMode.Persistent.value
    if headers is not None:
        properties.headers = {**(properties.headers or {}), **headers}
    payload = body.encode() if isinstance(body, str) else body
    channel.basic_publish(first_exchange(delay, prefix), key, payload, properties, mandatory=True)


@contextmanager
def _conflict(kind: str, name: str, wanted: str) -> Iterator[None]:
    try:
        yield
    except pika.exceptions.ChannelClosedByBroker as exc:
        if exc.reply_code != PRECONDITION_FAILED:
            raise
        raise TopologyConflict(kind, name, wanted, exc.reply_text) from exc


def check_destination(destination: str) -> None:
    """Raise :class:`InvalidDestination` unless ``destination`` can end a routing key and a binding."""
    if not isinstance(destination, str) or not destination:
        raise InvalidDestination(f"A destination is a queue's name, not {destination!r}.")
    if "*" in destination or "#" in destination:
        raise InvalidDestination(f"Destination {destination!r}: '*' and '#' are wildcards in a binding.")
    if len(destination.encode()) > MAX_DESTINATION_BYTES:
        raise InvalidDestination(
            f"Destination {destination[:40]!r}... is longer than {MAX_DESTINATION_BYTES} bytes, "
            "what a routing key leaves after the delay's bits."
        )
