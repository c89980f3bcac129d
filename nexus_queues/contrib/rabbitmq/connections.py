"""Connections to the broker (pika's blocking client), and the errors that mean the broker is away."""

from __future__ import annotations

import pika
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection

from .conf import settings

BROKER_ERRORS: tuple[type[BaseException], ...] = (pika.exceptions.AMQPError, OSError)
"""What a lost, refused or closed connection or channel raises."""


def connect(url: str | None = None) -> BlockingConnection:
    """A blocking connection to the broker at ``url`` (default: the ``URL`` setting)."""
    return pika.BlockingConnection(pika.URLParameters(url or settings.URL))


def confirmed_channel(connection: BlockingConnection) -> BlockingChannel:
    """A channel in publisher-confirm mode: each publish returns once the broker has taken the message."""
    channel = connection.channel()
    channel.confirm_delivery()
    return channel
