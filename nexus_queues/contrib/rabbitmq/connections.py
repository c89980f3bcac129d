"""Connections to the broker (pika's blocking client), and the errors that mean the broker is away."""

from __future__ import annotations

import pika
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection

from .conf import settings

BROKER_ERRORS: tuple[type[BaseException], ...] = (pika.exceptions.AMQPError, OSError)
"""What a lost, refused or closed connection or channel raises."""


def parameters(url: str | None = None, name: str | None = None) -> pika.URLParameters:
    """Connection parameters of the broker at ``url`` (default: the ``URL`` setting), called ``name`` in the
    broker's connection list (``rabbitmqctl list_connections client_properties``) when given."""
    found = pika.URLParameters(url or settings.URL)
    if name is not None:
        found.client_properties = {"connection_name": name}
    return found


def connect(url: str | None = None, *, name: str | None = None) -> BlockingConnection:
    """A blocking connection to the broker at ``url`` (default: the ``URL`` setting), called ``name`` when given."""
    return pika.BlockingConnection(parameters(url, name))


def confirmed_channel(connection: BlockingConnection) -> BlockingChannel:
    """A channel in publisher-confirm mode: each publish returns once the broker has taken the message."""
    channel = connection.channel()
    channel.confirm_delivery()
    return channel


NOT_FOUND = 404
"""The AMQP reply code of a passive declare that finds nothing."""


def queue_exists(connection: BlockingConnection, queue: str) -> bool:
    """Does ``queue`` exist? Asked on a channel of its own, since the broker closes the channel that asks in vain."""
    channel = connection.channel()
    try:
        channel.queue_declare(queue, passive=True)
    except pika.exceptions.ChannelClosedByBroker as exc:
        if exc.reply_code != NOT_FOUND:
            raise
        return False
    channel.close()
    return True
