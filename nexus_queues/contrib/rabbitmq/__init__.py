"""RabbitMQ: delays inside the broker, and a lossless bridge between nexus queues and AMQP queues.

Add ``"nexus_queues.contrib.rabbitmq"`` to ``INSTALLED_APPS`` (for its management commands) and
install the ``rabbitmq`` extra. Nothing here imports pika until it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...exports import lazy_exports

_EXPORTS = {
    "connect": "connections",
    "Consumer": "consuming",
    "SourceNotFound": "consuming",
    "declare_delay_infrastructure": "delays",
    "bind_endpoint": "delays",
    "routing_key": "delays",
    "publish": "delays",
    "InvalidDelay": "delays",
    "InvalidDestination": "delays",
    "TopologyConflict": "delays",
    "MAX_DELAY": "delays",
    "RabbitMQPublishJob": "publishing",
    "NotPublished": "publishing",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .connections import connect
    from .consuming import Consumer, SourceNotFound
    from .delays import (
        MAX_DELAY,
        InvalidDelay,
        InvalidDestination,
        TopologyConflict,
        bind_endpoint,
        declare_delay_infrastructure,
        publish,
        routing_key,
    )
    from .publishing import NotPublished, RabbitMQPublishJob


__getattr__ = lazy_exports(__name__, _EXPORTS)
