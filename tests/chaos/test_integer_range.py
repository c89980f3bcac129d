"""Integers not every engine reads back alike (outside the signed 64-bit range) are refused with ``UnstorableValue``
naming the value, on every path a message takes in: enqueue, ``enqueue_many``, headers, the API, the admin, Spark's
stager, the RabbitMQ consumer. Where the value sat beside a null it raised msgspec's raw
``OverflowError``; elsewhere it was stored, and SQLite's JSON functions read it back as a float."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest
from django.test import Client

from nexus_queues import enqueue, enqueue_many
from nexus_queues.contrib.rabbitmq.consuming import Consumer
from nexus_queues.contrib.spark.rows import RowStager
from nexus_queues.exceptions import UnstorableValue
from nexus_queues.limits import MAX_INTEGER, MIN_INTEGER
from nexus_queues.serialization import canonical_json
from tests.api_client import Api, make_user
from tests.chaos.test_consumer_dead_letter import counts, publish, source  # noqa: F401  (the source fixture)
from tests.commands import wait_until
from tests.contrib.rabbitmq.conftest import Broker, broker, rabbitmq  # noqa: F401  (the broker fixture)
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Audit, Greeting

pytestmark = pytest.mark.django_db

TOO_BIG = [MAX_INTEGER + 1, 2**64, 2**64 + 1, MIN_INTEGER - 1, 10**40]


@pytest.mark.parametrize("value", TOO_BIG)
@pytest.mark.parametrize("beside", [{}, {"other": None}], ids=["alone", "beside_a_null"])
def test_canonical_json__an_integer_beyond_64_bits_is_unstorable(value: int, beside: dict[str, Any]) -> None:
    """Alone or beside a null (where msgspec's msgpack encoder raised OverflowError), named by its path."""
    with pytest.raises(UnstorableValue, match=r"^value\.x\.n: .* is outside the signed 64-bit range"):
        canonical_json({"x": {"n": value, **beside}})


def test_canonical_json__the_range_ends_are_kept() -> None:
    """The ends of the range, and integers written with 19 digits inside it, are stored as they are."""
    data = {"lowest": MIN_INTEGER, "highest": MAX_INTEGER, "nineteen": 10**18, "none": None}
    assert json.loads(canonical_json(data)) == data


def test_enqueue__the_range_ends_read_back_exactly() -> None:
    """Every engine reads the range's ends back as they were written."""
    enqueue_many([Greeting(name="low", times=MIN_INTEGER), Greeting(name="high", times=MAX_INTEGER)])
    assert sorted(m.times for m in (item.message for item in Greeting.queue_items())) == [MIN_INTEGER, MAX_INTEGER]
    assert Greeting.queue_items().filter(message__times=MAX_INTEGER).count() == 1


@pytest.mark.parametrize("value", TOO_BIG)
def test_enqueue__an_integer_beyond_64_bits_stores_nothing(value: int) -> None:
    """A typed field, an untyped one beside a null, a header, a message of ``enqueue_many``: refused, nothing stored."""
    with pytest.raises(UnstorableValue, match="Greeting.times: .* signed 64-bit range"):
        enqueue(Greeting(name="a", times=value))
    with pytest.raises(UnstorableValue, match="Audit.details.n: "):
        enqueue(Audit(event="e", details={"n": value, "note": None}))
    with pytest.raises(UnstorableValue, match="headers.trace: "):
        enqueue(Greeting(name="a"), headers={"trace": value, "span": None})
    with pytest.raises(UnstorableValue, match="^message 1: Greeting.times: "):
        enqueue_many([Greeting(name="a"), Greeting(name="b", times=value)])
    assert not Greeting.queue_items().exists() and not Audit.queue_items().exists()


def test_api__an_integer_beyond_64_bits_is_422(settings: Any) -> None:
    """POST of a message holding one (beside a null) answers 422 naming the field; nothing is stored."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    api = Api(make_user("root", superuser=True))
    response = api.post("queues/audits", '{"event": "e", "details": {"n": 18446744073709551616, "note": null}}')
    assert response.status_code == 422, response.content[:500]
    assert "Audit.details.n" in response.content.decode()
    response = api.post("queues/greetings", '[{"name": "a"}, {"name": "b", "times": 9223372036854775808}]')
    assert response.status_code == 422, response.content[:500]
    assert not Audit.queue_items().exists() and not Greeting.queue_items().exists()


def test_admin__an_integer_beyond_64_bits_shows_on_the_form(admin_client: Client) -> None:
    """The admin's enqueue form shows why and stores nothing."""
    text = '{"event": "e", "details": {"n": 18446744073709551616, "note": null}}'
    response = admin_client.post("/admin/testapp/auditqueueitem/add/", {"message": text})
    assert response.status_code == 200
    assert "signed 64-bit range" in response.content.decode()
    assert not Audit.queue_items().exists()


def test_spark_stager__an_integer_beyond_64_bits_is_a_reject() -> None:
    """A Spark row whose text column holds such an integer for an int field is rejected with the reason."""
    rows = [{"name": "a", "times": "18446744073709551616"}, {"name": "b", "times": "3"}]
    stager = RowStager(Greeting, token=1, partition=0, now=datetime(2030, 1, 1, tzinfo=UTC))
    first, second = stager.rows(pa.RecordBatch.from_pylist(rows))
    assert first.reject is not None and "signed 64-bit range" in first.reject
    assert second.reject is None


class Steps(Consumer):
    """The real consumer, counting the deliveries it handled."""

    def __init__(self, **options: Any) -> None:
        super().__init__(poll=0.1, **options)
        self.seen = 0

    def handle(self, deliveries: Sequence[Any]) -> Any:
        self.seen += len(deliveries)
        return super().handle(deliveries)


@pytest.mark.django_db(transaction=True)
def test_consumer__an_integer_beyond_64_bits_is_dead_lettered(broker: Broker, source: str) -> None:  # noqa: F811
    """The body goes to ``<from>.invalid`` with its reason; the bodies around it are stored; the consumer goes on."""
    publish(broker, source, [b'{"n": 1}', b'{"n": 18446744073709551616}', b'{"n": 2}'])
    consumer = Steps(source=source, message_class=Ping)
    try:
        wait_until(lambda: consumer.step() is not None and consumer.seen >= 3, "three deliveries handled")
        wait_until(lambda: counts(broker, f"{source}.invalid") == 1, "the body dead-lettered")
    finally:
        consumer.disconnect()
    assert sorted(item.message.n for item in Ping.queue_items()) == [1, 2]
    dead = broker.channel.basic_get(f"{source}.invalid", auto_ack=True)
    assert dead[2] == b'{"n": 18446744073709551616}'
    assert "signed 64-bit range" in json.dumps(dead[1].headers)
