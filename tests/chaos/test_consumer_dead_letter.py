"""The consumer when ``<from>.invalid`` refuses a dead-letter: what was stored is acknowledged once, the invalid
body is held unacknowledged (never lost, never looping), and it is dead-lettered once the queue takes it again."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import pika
import pytest
from django.db import connection

from nexus_queues.contrib.rabbitmq.bodies import Delivery
from nexus_queues.contrib.rabbitmq.consuming import Consumer
from nexus_queues.enqueueing import EnqueueResult
from tests.commands import PATIENCE, wait_until
from tests.contrib.rabbitmq.conftest import Broker, broker, rabbitmq  # noqa: F401  (the broker fixture)
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Arrival

pytestmark = pytest.mark.django_db(transaction=True)

VALID = 50
"""Valid bodies around the one invalid body, as in the attack that found the loop."""


class Counting(Consumer):
    """The real consumer, keeping every delivery it handled."""

    def __init__(self, **options: Any) -> None:
        super().__init__(poll=0.1, max_backoff=timedelta(seconds=0.5), **options)
        self.handled: list[Delivery] = []

    def handle(self, deliveries: Sequence[Delivery]) -> EnqueueResult:
        self.handled.extend(deliveries)
        return super().handle(deliveries)

    def redelivered(self) -> int:
        """Deliveries the broker sent a second time."""
        return sum(1 for delivery in self.handled if delivery.redelivered)


@pytest.fixture
def source(broker: Broker) -> Iterator[str]:  # noqa: F811
    """An AMQP queue of this test's, its ``.invalid`` queue marked for deletion, and the policy dropped after."""
    name = broker.name("in")
    broker.name("in.invalid")
    broker.channel.queue_declare(name)
    yield name
    _rabbitmqctl("clear_policy", _policy_name(name), check=False)  # set by some tests only


def bodies(message_class: type) -> list[bytes]:
    """``VALID`` valid bodies of ``message_class`` with one body it refuses in the middle."""
    if message_class is Arrival:
        valid = [json.dumps({"arrival_id": f"a{n}", "n": n}).encode() for n in range(VALID)]
    else:
        valid = [json.dumps({"n": n}).encode() for n in range(VALID)]
    return [*valid[: VALID // 2], b"not json", *valid[VALID // 2 :]]


def publish(broker: Broker, queue: str, messages: list[bytes]) -> None:  # noqa: F811
    for body in messages:
        broker.channel.basic_publish("", queue, body, mandatory=True)


def counts(broker: Broker, queue: str) -> int:  # noqa: F811
    """Messages of ``queue`` ready for delivery."""
    return broker.channel.queue_declare(queue, passive=True).method.message_count


def refuse_publishes(broker: Broker, source: str) -> None:  # noqa: F811
    """Cap ``<source>.invalid`` at no message with ``reject-publish``, so the broker nacks every publish to it,
    then check that it does."""
    pattern = "^" + f"{source}.invalid".replace(".", r"\.") + "$"
    definition = json.dumps({"max-length": 0, "overflow": "reject-publish"})
    _rabbitmqctl("set_policy", "--apply-to", "queues", _policy_name(source), pattern, definition)
    broker.channel.queue_declare(f"{source}.invalid", durable=True)
    with pytest.raises(pika.exceptions.NackError):
        broker.channel.basic_publish("", f"{source}.invalid", b"probe", mandatory=True)


def run_steps(consumer: Counting, broker: Broker, source: str, seen: int) -> None:  # noqa: F811
    """Step the consumer until it has handled ``seen`` deliveries, then five more (where a loop would show)."""

    def stepped() -> bool:
        consumer.step()
        return len(consumer.handled) >= seen

    wait_until(stepped, f"{seen} deliveries handled")
    for _ in range(5):
        consumer.step()


@pytest.mark.parametrize("message_class", [Ping, Arrival], ids=["without_identity", "with_identity"])
def test_consumer__a_nacked_dead_letter_stores_each_body_once(broker, source, message_class, caplog):  # noqa: F811
    """``<from>.invalid`` capped with reject-publish: the valid bodies are stored once and acknowledged, nothing is
    redelivered, the invalid body stays in the source queue unacknowledged, the log and the consumer's health say
    why, and once the cap is lifted the body is dead-lettered."""
    refuse_publishes(broker, source)
    publish(broker, source, bodies(message_class))
    consumer = Counting(source=source, message_class=message_class)
    try:
        with caplog.at_level(logging.WARNING, "nexus_queues.rabbitmq"):
            run_steps(consumer, broker, source, VALID + 1)
        assert message_class.queue_model.objects.count() == VALID
        assert len(consumer.handled) == VALID + 1
        assert consumer.redelivered() == 0
        held = [r for r in caplog.records if getattr(r, "action", None) == "invalid_held"]
        assert held and "nack" in held[0].getMessage().lower()
        assert "held" in consumer.health().summary
        _rabbitmqctl("clear_policy", _policy_name(source))
        wait_until(lambda: consumer.step() is not None and counts(broker, f"{source}.invalid") == 1,
                   "the held body dead-lettered")
        assert consumer.health().summary == "OK"
    finally:
        consumer.disconnect()
    assert counts(broker, source) == 0
    assert message_class.queue_model.objects.count() == VALID


def test_consumer__a_held_body_goes_back_to_the_source_when_the_consumer_stops(broker, source):  # noqa: F811
    """A body ``<from>.invalid`` refused is not lost when the consumer stops: the broker keeps it in the source."""
    refuse_publishes(broker, source)
    publish(broker, source, bodies(Arrival))
    consumer = Counting(source=source, message_class=Arrival)
    try:
        run_steps(consumer, broker, source, VALID + 1)
    finally:
        consumer.disconnect()
    assert counts(broker, source) == 1
    assert counts(broker, f"{source}.invalid") == 0
    assert Arrival.queue_model.objects.count() == VALID


@pytest.mark.parametrize("message_class", [Ping, Arrival], ids=["without_identity", "with_identity"])
def test_consumer__a_deleted_invalid_queue_stores_each_body_once(broker, source, message_class):  # noqa: F811
    """``<from>.invalid`` deleted while the consumer runs: the valid bodies are stored once, nothing is redelivered,
    and the queue is declared again for the invalid body."""
    consumer = Counting(source=source, message_class=message_class)
    try:
        consumer.connect()
        broker.channel.queue_delete(f"{source}.invalid")
        publish(broker, source, bodies(message_class))
        run_steps(consumer, broker, source, VALID + 1)
        wait_until(lambda: consumer.step() is not None and counts(broker, f"{source}.invalid") == 1,
                   "the invalid body dead-lettered to the queue declared again")
        assert len(consumer.handled) == VALID + 1
        assert consumer.redelivered() == 0
    finally:
        consumer.disconnect()
    assert counts(broker, source) == 0
    assert message_class.queue_model.objects.count() == VALID


def test_consumer__a_failed_commit_gives_back_its_batch_but_not_the_held_body(broker, source):  # noqa: F811
    """A body held, then a batch whose commit fails: the batch goes back to the broker and is stored once the
    table is back; the held body stays held (not given back and delivered again), and is dead-lettered once the
    cap is lifted. The connection never breaks."""
    refuse_publishes(broker, source)
    publish(broker, source, [b"not json"])
    consumer = Counting(source=source, message_class=Arrival)
    table = Arrival.queue_model._meta.db_table
    try:
        wait_until(lambda: consumer.step() is not None and len(consumer.held.bodies) == 1, "the body held")
        with connection.schema_editor() as editor:
            editor.alter_db_table(Arrival.queue_model, table, f"{table}_away")
        try:
            publish(broker, source, bodies(Arrival)[: VALID // 2])
            wait_until(lambda: consumer.step() > 0, "the commit to fail")
        finally:
            with connection.schema_editor() as editor:
                editor.alter_db_table(Arrival.queue_model, f"{table}_away", table)
        wait_until(lambda: consumer.step() is not None and Arrival.queue_model.objects.count() == VALID // 2,
                   "the batch stored once the table is back")
        assert len(consumer.held.bodies) == 1
        _rabbitmqctl("clear_policy", _policy_name(source))
        wait_until(lambda: consumer.step() is not None and counts(broker, f"{source}.invalid") == 1,
                   "the held body dead-lettered")
        assert consumer.broker.failures == 0
        assert [delivery.body for delivery in consumer.handled].count(b"not json") == 1
    finally:
        consumer.disconnect()
    assert counts(broker, source) == 0


def _policy_name(source: str) -> str:
    return f"{source}-invalid-cap"


def _rabbitmqctl(*args: str, check: bool = True) -> None:
    done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 0 or not check, done.stderr
