"""The attack round's batches larger than MariaDB/MySQL's ``max_allowed_packet``: every batched write stays
within it, and a message or result too large for it fails alone, the connection still usable.

The data is sized from the ``max_allowed_packet`` the server says, so the tests hold for any setting of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.db import connection, transaction

from nexus_queues import Status
from nexus_queues.contrib.rabbitmq.consuming import Consumer
from nexus_queues.contrib.spark import sync
from nexus_queues.contrib.tasks.compat import TaskResultStatus
from nexus_queues.contrib.tasks.queues import task_queue
from nexus_queues.enqueueing import enqueue, enqueue_many
from nexus_queues.exceptions import MessageTooLarge
from nexus_queues.staging import StagedRow, create, drop, new_table_name, new_token, stage, staging_model
from tests.contrib.rabbitmq.conftest import Broker, broker, rabbitmq  # noqa: F401
from tests.contrib.spark.conftest import frame, spark  # noqa: F401
from tests.tasks.conftest import files_fixture, manage_fixture  # noqa: F401
from tests.testapp import tasks
from tests.testapp.queues import Greeting, Product

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engines("mysql")]


@pytest.fixture
def packet() -> int:
    """The session's ``max_allowed_packet``, as the server says."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@SESSION.max_allowed_packet")
        return int(cursor.fetchone()[0])


def still_usable() -> None:
    """The connection runs a transaction after the failure, as the attack's next query did not."""
    with transaction.atomic():
        enqueue(Greeting(name="after"))
    assert Greeting.queue_model.objects.filter(message__name="after").count() == 1


def test_enqueue_many__a_batch_larger_than_the_packet_is_stored(packet, settings):
    """Messages of 4 KB, a quarter more than the packet in all, in one BATCH_SIZE: all stored."""
    count = packet * 5 // 4 // 4096 + 1
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "BATCH_SIZE": count}
    result = enqueue_many(Greeting(name=f"{n:06}" + "g" * 4090) for n in range(count))
    assert len(result.stored) == count == Greeting.queue_model.objects.count()


def test_enqueue_many__an_upsert_larger_than_the_packet_is_stored(packet):
    """A thousand messages with identity, a quarter more than the packet in all: all stored."""
    size = packet * 5 // 4 // 1000
    result = enqueue_many(Product(sku=f"s{n}", name="p" * size) for n in range(1000))
    assert len(result.stored) == 1000 == Product.queue_model.objects.count()


def test_enqueue_many__a_message_larger_than_the_packet_fails_alone(packet):
    """A message larger than the packet raises MessageTooLarge naming it, its size and the limit; nothing stored."""
    messages = [Greeting(name="small"), Greeting(name="g" * packet), Greeting(name="small too")]
    with pytest.raises(MessageTooLarge, match=r"Message 1 takes [\d,]+ bytes.*max_allowed_packet") as raised:
        enqueue_many(messages)
    assert raised.value.size > packet > raised.value.limit
    assert not Greeting.queue_model.objects.exists()
    still_usable()


def test_enqueue__a_message_larger_than_the_packet_keeps_the_connection(packet):
    """One message with identity larger than the packet: MessageTooLarge, nothing stored, the connection usable."""
    with pytest.raises(MessageTooLarge, match="The message takes"):
        enqueue(Product(sku="big", name="p" * packet))
    assert not Product.queue_model.objects.exists()
    still_usable()


def test_task__an_argument_larger_than_the_packet_keeps_the_connection(packet):
    """A task whose argument is larger than the packet is refused on enqueue; the connection stays usable."""
    with pytest.raises(MessageTooLarge):
        tasks.shout.enqueue("a" * packet)
    assert not task_queue("default").queue_items().exists()
    still_usable()


def test_task__a_result_larger_than_the_packet_fails_alone(packet, manage):
    """Of a batch of ten tasks, the one returning more than the packet fails with ResultTooLarge, even where
    TASK_RESULT_MAX_BYTES allows it; the others keep their results (the whole batch's acknowledgement failed,
    and the ten were Abandoned)."""
    results = [tasks.sized.enqueue(packet if n == 3 else 10) for n in range(10)]
    command = manage(
        "nexus_worker", "--burst", "--queue", "tasks_default",
        NEXUS_TEST_TASKS_BATCH="10", NEXUS_TEST_TASK_RESULT_MAX_BYTES=str(packet * 4),
    )
    assert command.finish() == 0, command.log()
    for n, result in enumerate(results):
        result.refresh()
        if n == 3:
            assert result.status == TaskResultStatus.FAILED
            assert result.errors[0].exception_class_path == "nexus_queues.exceptions.ResultTooLarge"
            assert "max_allowed_packet" in result.errors[0].traceback
            assert task_queue("default").queue_items().get(message_id=result.id).return_value is None
        else:
            assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == "r" * 10
    assert not task_queue("default").queue_items().filter(status=Status.ABANDONED).exists()


@pytest.fixture
def staging_table() -> Iterator[str]:
    table = new_table_name("greetings")
    create("default", table)
    yield table
    drop("default", table)


def test_staging__rows_larger_than_the_packet_are_staged(packet, staging_table):
    """The Spark sync's staging rows, 4 KB each and a quarter more than the packet in all: all staged."""
    token = new_token()
    count = packet * 5 // 4 // 4096 + 1
    text = json.dumps({"name": "g" * 4096})
    rows = [StagedRow(token, n, None, text, "0" * 64, "{}", None, None, None, None) for n in range(count)]
    stage("default", staging_table, rows)
    assert staging_model(staging_table)._default_manager.count() == count


def test_spark_sync__staging_batches_larger_than_the_packet_are_stored(packet, frame):  # noqa: F811
    """A Spark sync whose Arrow batches (100 rows in the tests' session) take a quarter more than the packet: all
    stored."""
    size = packet * 5 // 4 // 100
    counts = sync(frame([(f"s{n}", "p" * size) for n in range(400)], "sku string, name string"), Product)
    assert counts.new == 400 == Product.queue_model.objects.count()


def test_spark_sync__a_row_larger_than_the_packet_is_rejected_alone(packet, spark, tmp_path):  # noqa: F811
    """A row whose message takes more than the packet is a reject naming its size and the limit, told in the rejects
    file by its place and the sizes of its long values; the other rows are stored."""
    path = tmp_path / "rejects.jsonl"
    rows = [(f"s{n}", "p" * (packet + 1 if n == 2 else 10)) for n in range(5)]
    counts = sync(spark.createDataFrame(rows, "sku string, name string").coalesce(1), Product, rejects=str(path))
    assert (counts.new, counts.rejected) == (4, 1)
    assert sorted(Product.queue_model.objects.values_list("message_id", flat=True)) == ["s0", "s1", "s3", "s4"]
    (reject,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert reject["position"] == 2
    assert reject["row"] == {"sku": "s2", "name": f"({packet + 3:,} characters of JSON)"}
    assert "the database takes at most" in reject["errors"][0]["reason"]
    assert f"max_allowed_packet {packet:,}" in reject["errors"][0]["reason"]


def test_consumer__bodies_larger_than_the_packet_are_stored(packet, broker: Broker):  # noqa: F811
    """Three hundred bodies in hand, a quarter more than the packet in all: stored, the big one alone refused."""
    source = broker.name("in")
    broker.channel.queue_declare(source)
    size = packet * 5 // 4 // 300
    bodies = [json.dumps({"sku": f"s{n}", "name": "p" * size}).encode() for n in range(300)]
    bodies.append(json.dumps({"sku": "big", "name": "p" * packet}).encode())
    for body in bodies:
        broker.channel.basic_publish("", source, body)
    consumer = Consumer(source=source, message_class=Product, poll=1, prefetch=301, invalid_messages="reject")
    try:
        consumer.connect()
        deliveries = []
        while len(deliveries) < len(bodies):
            deliveries += consumer.fetch()
        result = consumer.handle(deliveries)
    finally:
        consumer.disconnect()
    assert len(result.stored) == 300 == Product.queue_model.objects.count()
    assert not Product.queue_model.objects.filter(message_id="big").exists()
