"""The RabbitMQ bridge through its real commands, beside pika alone on the same broker and database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench_rmq N=20000 \\
        .venv/bin/python tests/benchmarks/bench_rabbitmq.py

  raw_publish   pika alone: N bodies published with confirms, one at a time (what the outbox waits for)
  outbox        ``manage.py nexus_worker --burst --queue shipments`` (INFO logging, as a user runs it) over
                N Pending shipments: leased, published with confirms, marked Processed; the command's
                start-up (the same command over an empty queue) is measured and left out
  raw_publish_tx  pika alone: the same N bodies in transactions of 100 (tx.commit per 100), the broker's
                limit when the wait for it is paid once per batch rather than once per message
  raw_consume   pika alone: N bodies consumed, prefetch 100, acknowledged 100 at a time, stored nowhere
  db_batches    enqueue_many of N arrivals in batches of 100, in this process: the database's side alone
  consume       ``manage.py nexus_rabbitmq_consume --from ... --queue arrivals`` over N waiting bodies:
                from the command's first batch to the N-th row in the arrivals table

The settings are the tests' (``tests.settings``: the test app's queues and ShipmentJob), on the
database of DATABASE_URL (migrated here); the broker's names live under the prefix ``nexus-bench``
and are deleted after. Prints one line per measure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("NEXUS_TEST_RABBITMQ_PREFIX", "nexus-bench")
os.environ.setdefault("NEXUS_TEST_BATCH", "100")

import django  # noqa: E402

django.setup()

import pika  # noqa: E402
from django.core.management import call_command  # noqa: E402

from nexus_queues import enqueue_many  # noqa: E402
from nexus_queues.contrib.rabbitmq.conf import settings as rabbitmq  # noqa: E402
from nexus_queues.contrib.rabbitmq.connections import confirmed_channel, connect  # noqa: E402
from nexus_queues.contrib.rabbitmq.delays import (  # noqa: E402
    bind_endpoint,
    declare_delay_infrastructure,
    publish,
)
from tests.contrib.rabbitmq.conftest import delete_names  # noqa: E402
from tests.testapp.jobs import ShipmentJob  # noqa: E402
from tests.testapp.queues import Arrival, Shipment  # noqa: E402

N = int(os.environ.get("N", 20_000))
SHIPPING = ShipmentJob.destination
ARRIVALS = f"{rabbitmq.DELAY_PREFIX}.arrivals"


def manage(*args: str) -> list[str]:
    """The argv of a real ``manage.py`` command on these settings."""
    return [sys.executable, str(ROOT / "manage.py"), *args, "--settings", "tests.settings"]


def line(measure: str, seconds: float, count: int = N, note: str = "") -> None:
    print(f"{measure:<15} {count:>7} messages {seconds:7.2f} s {count / seconds:9.0f} msg/s  {note}", flush=True)


def raw_publish(channel: pika.adapters.blocking_connection.BlockingChannel, queue: str, bodies: list[bytes]) -> float:
    started = time.perf_counter()
    for body in bodies:
        publish(channel, body, queue)
    return time.perf_counter() - started


def raw_publish_tx(connection: pika.BlockingConnection, queue: str, bodies: list[bytes]) -> float:
    channel = connection.channel()
    channel.tx_select()
    started = time.perf_counter()
    for start in range(0, len(bodies), 100):
        for body in bodies[start:start + 100]:
            publish(channel, body, queue)
        channel.tx_commit()
    elapsed = time.perf_counter() - started
    channel.close()
    return elapsed


def db_batches(bodies: list[bytes]) -> float:
    Arrival.queue_items().all().delete()
    messages = [Arrival.model_validate_json(body) for body in bodies]
    started = time.perf_counter()
    for start in range(0, len(messages), 100):
        enqueue_many(messages[start:start + 100])
    elapsed = time.perf_counter() - started
    Arrival.queue_items().all().delete()
    return elapsed


def raw_consume(channel: pika.adapters.blocking_connection.BlockingChannel, queue: str, count: int) -> float:
    channel.basic_qos(prefetch_count=100)
    started = time.perf_counter()
    seen = 0
    for method, _, _ in channel.consume(queue):
        seen += 1
        if seen % 100 == 0 or seen == count:
            channel.basic_ack(method.delivery_tag, multiple=True)
        if seen == count:
            break
    channel.cancel()
    return time.perf_counter() - started


def outbox(channel: pika.adapters.blocking_connection.BlockingChannel) -> None:
    Shipment.queue_items().all().delete()
    started = time.perf_counter()
    subprocess.run(manage("nexus_worker", "--burst", "--queue", "shipments"), check=True, capture_output=True)
    startup = time.perf_counter() - started
    enqueue_many(Shipment(order_id=f"O-{i}") for i in range(N))
    started = time.perf_counter()
    subprocess.run(manage("nexus_worker", "--burst", "--queue", "shipments"), check=True, capture_output=True)
    elapsed = time.perf_counter() - started
    left = Shipment.queue_items().exclude(status="Processed").count()
    assert left == 0, f"{left} shipments were not published"
    waiting = channel.queue_declare(SHIPPING, passive=True).method.message_count
    assert waiting == N, f"{waiting} of {N} shipments reached {SHIPPING}"
    line("outbox", elapsed - startup, note=f"(command {elapsed:.2f} s, of which start-up {startup:.2f} s)")
    channel.queue_purge(SHIPPING)


def consume(channel: pika.adapters.blocking_connection.BlockingChannel, bodies: list[bytes]) -> None:
    Arrival.queue_items().all().delete()
    raw_publish(channel, ARRIVALS, bodies)
    command = subprocess.Popen(manage("nexus_rabbitmq_consume", "--from", ARRIVALS, "--queue", "arrivals"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert command.stderr is not None
    for log in command.stderr:  # INFO logging: a line per batch stored
        if "received" in log:
            break
    started = time.perf_counter()
    while Arrival.queue_items().count() < N:
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    command.send_signal(signal.SIGTERM)
    command.communicate(timeout=60)
    line("consume", elapsed, note="(from the first batch stored to the last; prefetch 100)")


def main() -> None:
    call_command("migrate", verbosity=0)
    connection = connect()
    channel = confirmed_channel(connection)
    declare_delay_infrastructure(channel)
    bind_endpoint(channel, SHIPPING)
    bind_endpoint(channel, ARRIVALS)
    bodies = [json.dumps({"arrival_id": f"A-{i}", "n": i}).encode() for i in range(N)]
    try:
        line("raw_publish", raw_publish(channel, ARRIVALS, bodies), note="(pika, confirm per message)")
        line("raw_consume", raw_consume(channel, ARRIVALS, N), note="(pika, prefetch 100, ack per 100)")
        line("raw_publish_tx", raw_publish_tx(connection, ARRIVALS, bodies), note="(pika, tx.commit per 100)")
        channel.queue_purge(ARRIVALS)
        line("db_batches", db_batches(bodies), note="(enqueue_many per 100, in process)")
        outbox(channel)
        consume(channel, bodies)
    finally:
        delete_names(channel, rabbitmq.DELAY_PREFIX, [SHIPPING, ARRIVALS, f"{ARRIVALS}.invalid"])
        connection.close()


if __name__ == "__main__":
    main()
