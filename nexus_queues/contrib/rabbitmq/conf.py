"""The bridge's settings: ``settings.NEXUS_RABBITMQ`` overrides any of these by name."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from nexus_queues.conf import LazySettings


@dataclass(frozen=True)
class RabbitMQSettings:
    """The defaults."""

    URL: str = "amqp://guest:guest@localhost:5672/%2F"
    """The broker, as an AMQP URL (``amqps://`` for TLS; query options such as ``heartbeat`` as pika reads them)."""

    DELAY_PREFIX: str = "nexus"
    """Names of the delay infrastructure: ``<prefix>.delay-level-NN`` and ``<prefix>.delay-delivery``.
    ``nsb.v2`` shares the infrastructure that NServiceBus.RabbitMQ 8 and later declare on the same broker."""

    INVALID_MESSAGES: str = "dead-letter"
    """What the consumer does with a body its message class refuses: ``dead-letter`` (publish it to the queue
    ``<from>.invalid`` with the reason, then acknowledge; a body that queue refuses is held unacknowledged and
    offered again) or ``reject`` (the broker dead-letters it by the
    source queue's own ``x-dead-letter-exchange``, or drops it when the queue has none). Logged either way."""

    CONFIRM_TIMEOUT: timedelta = timedelta(seconds=60)
    """How long the outbox waits for a batch's confirms (and a connection for its opening); past it, every
    unconfirmed message of the batch is not published, and retried."""

    MAX_BACKOFF: timedelta = timedelta(seconds=30)
    """The longest pause between reconnection attempts while the broker is away."""


settings: RabbitMQSettings = LazySettings("NEXUS_RABBITMQ", RabbitMQSettings)  # type: ignore[assignment]
