"""The real broker, shared by the whole run: each test declares its names under a prefix of its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from pika import URLParameters
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection
from pika.exceptions import AMQPConnectionError

from nexus_queues.contrib.rabbitmq.connections import confirmed_channel, connect
from nexus_queues.contrib.rabbitmq.delays import LEVELS, delivery_exchange, level_exchange
from tests.required import missing
from tests.settings import NEXUS_RABBITMQ

URL = NEXUS_RABBITMQ["URL"]


@dataclass
class Broker:
    """A test's corner of the broker: its prefix, a confirmed channel, and the names to delete afterwards."""

    prefix: str
    url: str
    connection: BlockingConnection
    channel: BlockingChannel
    names: list[str] = field(default_factory=list)

    def name(self, suffix: str) -> str:
        """A queue or exchange name of this test's own, deleted when the test ends."""
        name = f"{self.prefix}.{suffix}"
        self.names.append(name)
        return name

    def settings(self) -> dict[str, str]:
        """``NEXUS_RABBITMQ`` for this test: the broker, and delay infrastructure under its prefix."""
        return {**NEXUS_RABBITMQ, "DELAY_PREFIX": self.prefix}


@pytest.fixture(scope="session")
def rabbitmq() -> None:
    """The real broker answers: asked once per run, its tests skip (fail in CI) when it does not."""
    try:
        connect(URL).close()
    except AMQPConnectionError as exc:
        where = URLParameters(URL)
        missing(f"no RabbitMQ at {where.host}:{where.port} ({exc!r})",
                "start it (rabbitmq-server -detached), or NEXUS_TEST_RABBITMQ_URL=amqp://...")


@pytest.fixture
def broker(rabbitmq: None, settings: object) -> Iterator[Broker]:
    """A connection to the real broker and a prefix for this test.

    ``settings.NEXUS_RABBITMQ`` points at it for the test; everything under the prefix is deleted after.
    """
    prefix = f"nexus-test-{uuid.uuid4().hex[:12]}"
    connection = connect(URL)
    found = Broker(prefix, URL, connection, confirmed_channel(connection))
    settings.NEXUS_RABBITMQ = found.settings()  # type: ignore[attr-defined]
    try:
        yield found
    finally:
        _delete(found)


def _delete(found: Broker) -> None:
    connection = found.connection if found.connection.is_open else connect(URL)
    delete_names(connection.channel(), found.prefix, found.names)
    connection.close()


def delete_names(channel: BlockingChannel, prefix: str, names: list[str]) -> None:
    """Delete the queues and exchanges called ``names``, and the delay infrastructure under ``prefix``."""
    infrastructure = [level_exchange(level, prefix) for level in range(LEVELS)]
    for name in [*names, *infrastructure]:
        channel.queue_delete(name)
        channel.exchange_delete(name)
    channel.exchange_delete(delivery_exchange(prefix))
