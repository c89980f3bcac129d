"""The consumer in this process, against the real broker and the test database: a step at a time."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from nexus_queues.contrib.rabbitmq.bodies import Delivery
from nexus_queues.contrib.rabbitmq.consuming import Consumer, SourceNotFound
from nexus_queues.contrib.rabbitmq.invalid import QUEUE_HEADER, REASON_HEADER, SOURCE_HEADER, InvalidMode
from tests.commands import wait_until
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Arrival

from .conftest import Broker

pytestmark = pytest.mark.django_db(transaction=True)


def arrival(n: int) -> bytes:
    """The JSON body of arrival ``n``."""
    return json.dumps({"arrival_id": f"a{n}", "n": n}).encode()


def publish(broker: Broker, queue: str, *bodies: bytes) -> None:
    """Publish ``bodies`` to ``queue`` by the default exchange, each confirmed."""
    for body in bodies:
        broker.channel.basic_publish("", queue, body, mandatory=True)


def ready(broker: Broker, queue: str) -> int:
    """Messages of ``queue`` ready for delivery (not held unacknowledged by a consumer)."""
    return broker.channel.queue_declare(queue, passive=True).method.message_count


def stored() -> list[str]:
    """The message ids in the arrivals queue."""
    return sorted(Arrival.queue_model.objects.values_list("message_id", flat=True))


@pytest.fixture
def source(broker: Broker) -> str:
    """An AMQP queue of this test's, and the name of its ``.invalid`` queue marked for deletion."""
    name = broker.name("in")
    broker.name("in.invalid")
    broker.channel.queue_declare(name)
    return name


@pytest.fixture
def consumers(broker: Broker) -> Iterator[list[Consumer]]:
    """Consumers of this test, disconnected at its end."""
    made: list[Consumer] = []
    yield made
    for consumer in made:
        consumer.disconnect()


def consumer_of(consumers: list[Consumer], source: str, **options: Any) -> Consumer:
    made = Consumer(source=source, message_class=options.pop("message_class", Arrival), poll=0.1, **options)
    consumers.append(made)
    return made


def consume_until(consumer: Consumer, condition: Callable[[], bool], what: str) -> None:
    """Run the consumer a step at a time until ``condition()`` holds."""

    def stepped() -> bool:
        consumer.step()
        return condition()

    wait_until(stepped, what)


def test_consumer__stores_then_acknowledges(broker, source, consumers):
    """Bodies published to the AMQP queue are stored in the nexus queue, then acknowledged: the broker keeps none."""
    publish(broker, source, *(arrival(n) for n in range(5)))
    consumer = consumer_of(consumers, source)
    consume_until(consumer, lambda: len(stored()) == 5, "five arrivals stored")
    consumer.disconnect()  # what it held unacknowledged would now be ready again
    assert ready(broker, source) == 0
    assert stored() == [f"a{n}" for n in range(5)]


def test_consumer__a_batch_is_one_enqueue(broker, source, consumers, django_assert_max_num_queries):
    """Deliveries in hand are stored together: ten arrivals cost the queries of one enqueue_many, not ten."""
    publish(broker, source, *(arrival(n) for n in range(10)))
    consumer = consumer_of(consumers, source, prefetch=10)
    consumer.connect()
    deliveries: list[Delivery] = []
    wait_until(lambda: deliveries.extend(consumer.fetch()) or len(deliveries) == 10, "ten deliveries in hand")
    with django_assert_max_num_queries(6):
        result = consumer.handle(deliveries)
    assert len(result.stored) == 10


def test_consumer__a_redelivery_is_discarded(broker, source, consumers):
    """A body stored before, delivered again (a crash before the acknowledgement), stays stored once."""
    publish(broker, source, arrival(1), arrival(1), arrival(2))
    consumer = consumer_of(consumers, source)
    consume_until(consumer, lambda: ready(broker, source) == 0 and stored() == ["a1", "a2"], "the arrivals stored")
    consumer.disconnect()
    assert ready(broker, source) == 0
    assert Arrival.queue_model.objects.count() == 2


def test_consumer__a_queue_without_identity_stores_each_delivery(broker, source, consumers):
    """A queue without identity takes what comes: each delivery is a new row."""
    publish(broker, source, b'{"n": 1}', b'{"n": 1}', b"{}")
    consumer = consumer_of(consumers, source, message_class=Ping)
    consume_until(consumer, lambda: Ping.queue_model.objects.count() == 3, "three pings stored")
    assert sorted(item.message.n for item in Ping.queue_model.objects.all()) == [0, 1, 1]


def test_consumer__a_failed_commit_leaves_the_batch_in_the_broker(broker, source, consumers):
    """The nexus queue's table gone: nothing is acknowledged, the consumer backs off; once it is back, every
    message is stored."""
    publish(broker, source, *(arrival(n) for n in range(3)))
    table = Arrival.queue_model._meta.db_table
    with connection.schema_editor() as editor:
        editor.alter_db_table(Arrival.queue_model, table, f"{table}_away")
    try:
        consumer = consumer_of(consumers, source)
        wait_until(lambda: consumer.step() > 0, "the store to fail")
        assert consumer.database.failures == 1
        consumer.disconnect()
        assert ready(broker, source) == 3
    finally:
        with connection.schema_editor() as editor:
            editor.alter_db_table(Arrival.queue_model, f"{table}_away", table)
    consumer = consumer_of(consumers, source)
    consume_until(consumer, lambda: len(stored()) == 3, "the arrivals stored after the table came back")
    consumer.disconnect()
    assert ready(broker, source) == 0


def test_consumer__dead_letters_invalid_bodies(broker, source, consumers):
    """Not JSON and refused by the class: both go to ``<from>.invalid`` with the reason, none is stored, and the
    valid neighbours are."""
    publish(broker, source, arrival(1), b"not json", b'{"arrival_id": "x"}', arrival(2))
    consumer = consumer_of(consumers, source)
    invalid = f"{source}.invalid"
    consume_until(consumer, lambda: len(stored()) == 2 and ready(broker, invalid) == 2, "two stored, two refused")
    reasons = [_get(broker, invalid) for _ in range(2)]
    assert [body for body, _ in reasons] == [b"not json", b'{"arrival_id": "x"}']
    assert "Invalid JSON" in reasons[0][1][REASON_HEADER]
    assert reasons[1][1][REASON_HEADER] == "n: Field required"
    assert {headers[SOURCE_HEADER] for _, headers in reasons} == {source}
    assert {headers[QUEUE_HEADER] for _, headers in reasons} == {"arrivals"}
    consumer.disconnect()
    assert ready(broker, source) == 0
    assert stored() == ["a1", "a2"]


def test_consumer__rejects_invalid_bodies(broker, consumers):
    """In reject mode an invalid body is rejected: the broker dead-letters it by the source queue's own arguments."""
    rejected = broker.name("rejected")
    source = broker.name("in")
    broker.channel.queue_declare(rejected)
    broker.channel.queue_declare(
        source, arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": rejected}
    )
    publish(broker, source, b"[1, 2]", arrival(1))
    consumer = consumer_of(consumers, source, invalid_messages="reject")
    consume_until(consumer, lambda: stored() == ["a1"] and ready(broker, rejected) == 1, "one stored, one rejected")
    assert _get(broker, rejected)[0] == b"[1, 2]"
    consumer.disconnect()
    assert ready(broker, source) == 0


def test_consumer__a_missing_source_is_an_error(broker):
    """An AMQP queue that does not exist stops the consumer with an error naming it."""
    missing = broker.name("missing")
    with pytest.raises(SourceNotFound, match=f"'{missing}' does not exist"):
        Consumer(source=missing, message_class=Arrival).run()


def test_consumer__an_unreachable_broker_backs_off(caplog):
    """A broker that refuses the connection: each step asks for twice the last pause, up to the maximum, and
    only the outage's first failure is a warning."""
    with socket.socket() as bound:  # bound, never listening: connecting is refused
        bound.bind(("127.0.0.1", 0))
        url = f"amqp://guest:guest@127.0.0.1:{bound.getsockname()[1]}/%2F"
        consumer = Consumer(source="anything", message_class=Arrival, url=url, max_backoff=timedelta(seconds=0.3))
        with caplog.at_level(logging.DEBUG, "nexus_queues.rabbitmq"):
            pauses = [consumer.step() for _ in range(4)]
    assert pauses == [0.1, 0.2, 0.3, 0.3]
    warnings = [r for r in caplog.records if r.name == "nexus_queues.rabbitmq" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "The broker is away" in warnings[0].getMessage()


def test_consumer__an_unknown_invalid_mode_is_an_error():
    """``INVALID_MESSAGES`` other than dead-letter or reject is refused, naming both."""
    with pytest.raises(InvalidMode, match="dead-letter, reject"):
        Consumer(source="anything", message_class=Arrival, invalid_messages="drop")


def _get(broker: Broker, queue: str) -> tuple[bytes, dict[str, object]]:
    method, properties, body = broker.channel.basic_get(queue, auto_ack=True)
    assert method is not None, f"{queue} is empty"
    return body, properties.headers or {}
