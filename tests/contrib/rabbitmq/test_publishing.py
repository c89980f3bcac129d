"""The outbox job against the real broker: published once each, Processed only after confirm, nothing lost
when the broker is unreachable, closes the connection, or cannot route."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from nexus_queues import Status, enqueue_many
from nexus_queues.contrib.rabbitmq import NotPublished, RabbitMQPublishJob
from nexus_queues.contrib.rabbitmq.delays import bind_endpoint, declare_delay_infrastructure
from nexus_queues.contrib.rabbitmq.publishing import SOURCE_HEADER, disconnect
from nexus_queues.dispatching import move_due
from nexus_queues.exceptions import ConfigurationError
from nexus_queues.serialization import canonical_json
from nexus_queues.worker.lease_renewal import LeaseRenewal
from nexus_queues.worker.runs import run_once
from tests.commands import PATIENCE, ROOT
from tests.contrib.rabbitmq.conftest import Broker
from tests.testapp.jobs import ShipmentJob
from tests.testapp.queues import Shipment

pytestmark = pytest.mark.django_db(transaction=True)

NOT_PUBLISHED = f"{NotPublished.__module__}.{NotPublished.__qualname__}"


@pytest.fixture
def shipping(broker: Broker) -> Iterator[str]:
    """The delay levels under the test's prefix and the AMQP queue ShipmentJob publishes to, bound."""
    declare_delay_infrastructure(broker.channel, broker.prefix)
    queue = broker.name("shipping")
    bind_endpoint(broker.channel, queue, broker.prefix)
    yield queue
    disconnect()


def ship(*order_ids: str, delay_seconds: int = 0) -> None:
    enqueue_many([Shipment(order_id=order_id, delay_seconds=delay_seconds) for order_id in order_ids])


def statuses() -> dict[str, str]:
    """The rows left by id: the queue keeps no Processed rows, so a processed message is gone."""
    return {row.message_id: row.status for row in Shipment.queue_items()}


def received(broker: Broker, queue: str, count: int) -> list[tuple[object, bytes]]:
    """Wait for ``count`` messages on ``queue`` (acknowledged), then check that no more are there."""
    messages = []
    for _method, properties, body in broker.channel.consume(queue, auto_ack=True, inactivity_timeout=PATIENCE):
        assert body is not None, f"Gave up waiting for {count} messages on {queue}, got {len(messages)}."
        messages.append((properties, body))
        if len(messages) == count:
            break
    broker.channel.cancel()
    assert broker.channel.queue_declare(queue, passive=True).method.message_count == 0
    return messages


def order_ids(messages: list[tuple[object, bytes]]) -> list[str]:
    return sorted(properties.message_id for properties, _body in messages)  # type: ignore[attr-defined]


def retry_now() -> None:
    """Make the messages waiting for a retry due at once (the dispatch step, a day ahead)."""
    move_due(Shipment, timezone.now() + timedelta(days=1), 100)


def own_connections() -> dict[str, str]:
    """This process's outbox connections in the broker (named with its pid): the broker's pid for each name."""
    listed = subprocess.run(
        ["rabbitmqctl", "list_connections", "-q", "--no-table-headers", "pid", "client_properties"],
        capture_output=True, text=True, check=True, timeout=PATIENCE,
    ).stdout
    name = re.compile(rf'"connection_name","(nexus_queues [^"]*:{os.getpid()} [^"]*)"')
    return {found[1]: line.split("\t")[0] for line in listed.splitlines() if (found := name.search(line))}


def close_own_connections() -> None:
    """Close, in the broker, this process's outbox connections."""
    mine = own_connections().values()
    assert mine, "this process has no outbox connection to close"
    for pid in mine:
        subprocess.run(["rabbitmqctl", "close_connection", pid, "test"], capture_output=True, check=True,
                       timeout=PATIENCE)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_publish_job__publishes_each_message_once_marked_processed_after_confirm(broker, shipping):
    """Each message reaches the destination once, with its JSON, id, the run's correlation id and its source
    queue; then it is Processed."""
    ship("o1", "o2", "o3")
    assert run_once(ShipmentJob, LeaseRenewal()) == 3
    assert statuses() == {}
    messages = received(broker, shipping, 3)
    run = Shipment.job_runs().get()
    assert order_ids(messages) == ["o1", "o2", "o3"]
    for properties, body in messages:
        assert body.decode() == canonical_json(Shipment(order_id=properties.message_id))
        assert properties.correlation_id == run.correlation_id
        assert properties.content_type == "application/json"
        assert properties.headers == {SOURCE_HEADER: "shipments"}
    assert run.processed == 3


def test_publish_job__delay_taken_from_the_message(broker, shipping):
    """A message with ``delay_seconds=2`` arrives no earlier than 2 s after the run; one without, at once."""
    ship("later", delay_seconds=2)
    ship("now")
    started = time.monotonic()
    assert run_once(ShipmentJob, LeaseRenewal()) == 2
    first, second = received(broker, shipping, 1), received(broker, shipping, 1)
    assert order_ids(first) == ["now"]
    assert order_ids(second) == ["later"]
    assert time.monotonic() - started >= 2


def test_publish_job__unreachable_broker_keeps_messages_until_it_is_back(broker, shipping, settings):
    """With the broker unreachable every message stays, retried; once it is reachable each is published once."""
    ship("o1", "o2")
    reachable = settings.NEXUS_RABBITMQ
    settings.NEXUS_RABBITMQ = {**reachable, "URL": f"amqp://guest:guest@127.0.0.1:{closed_port()}/%2F"}
    for attempt in (1, 2):
        assert run_once(ShipmentJob, LeaseRenewal()) == 2
        rows = list(Shipment.queue_items())
        assert {(row.status, row.attempts, row.error_type) for row in rows} == {
            (Status.SLEEPING, attempt, NOT_PUBLISHED)
        }
        assert "cannot be reached" in rows[0].error_message
        retry_now()
    settings.NEXUS_RABBITMQ = reachable
    assert run_once(ShipmentJob, LeaseRenewal()) == 2
    assert order_ids(received(broker, shipping, 2)) == ["o1", "o2"]
    assert statuses() == {}


def test_publish_job__unreachable_broker_after_the_last_attempt_is_error(broker, shipping, settings):
    """Once its attempts are used up with the broker away, a message is Error with the reason, still stored."""
    ship("o1")
    port = closed_port()
    settings.NEXUS_RABBITMQ = {**settings.NEXUS_RABBITMQ, "URL": f"amqp://127.0.0.1:{port}/%2F"}
    for _attempt in range(ShipmentJob.max_attempts):
        retry_now()
        assert run_once(ShipmentJob, LeaseRenewal()) == 1
    row = Shipment.queue_items().get()
    assert (row.status, row.attempts, row.error_type) == (Status.ERROR, 3, NOT_PUBLISHED)
    assert row.error_message.startswith(f"The broker at 127.0.0.1:{port} cannot be reached: AMQPConnectionError: ")
    assert "Connection refused" in row.error_message


def test_publish_job__connection_closed_between_runs_is_reopened(broker, shipping):
    """A connection the broker closed while the worker was idle is replaced before the next run publishes."""
    ship("o1")
    assert run_once(ShipmentJob, LeaseRenewal()) == 1
    close_own_connections()
    ship("o2")
    assert run_once(ShipmentJob, LeaseRenewal()) == 1
    assert statuses() == {}
    assert order_ids(received(broker, shipping, 2)) == ["o1", "o2"]


class OnePerRun(ShipmentJob, abstract=True):
    """Leases one message per run."""

    batch_size = 1


def test_publish_job__one_connection_per_thread_kept_across_runs(broker, shipping):
    """Each worker thread publishes on a connection of its own, and keeps it for its next runs."""
    ship("o1", "o2", "o3")
    threads = [ThreadPoolExecutor(1, thread_name_prefix=f"outbox-test-{n}") for n in range(2)]
    try:
        for thread in (threads[0], threads[0], threads[1]):
            assert thread.submit(run_once, OnePerRun, LeaseRenewal()).result() == 1
        names = sorted(own_connections())
    finally:
        for thread in threads:
            thread.submit(disconnect).result()
            thread.submit(connections.close_all).result()
            thread.shutdown()
    assert [name.rsplit(" ", 1)[1] for name in names] == ["outbox-test-0_0", "outbox-test-1_0"]
    assert order_ids(received(broker, shipping, 3)) == ["o1", "o2", "o3"]


class ClosedMidBatch(ShipmentJob, abstract=True):
    """Has the broker close its connection just before it publishes ``o3``."""

    def delay_for(self, message: Shipment) -> timedelta:
        if message.order_id == "o3":
            close_own_connections()
        return super().delay_for(message)


def test_publish_job__connection_closed_mid_batch_fails_the_unconfirmed_which_are_published_later(broker, shipping):
    """A connection closed before the batch is confirmed leaves every unconfirmed message in the queue for a
    retry, which publishes each: all arrive, at least once (the broker may have taken some before it closed)."""
    ship("o1", "o2", "o3", "o4", "o5")
    assert run_once(ClosedMidBatch, LeaseRenewal()) == 5
    assert set(statuses()) == {"o1", "o2", "o3", "o4", "o5"} and set(statuses().values()) == {Status.SLEEPING}
    assert Shipment.job_runs().get().processed == 0
    error = Shipment.queue_items().get(message_id="o5").error_message
    assert "closed the channel, or the connection broke: ConnectionClosedByBroker" in error
    retry_now()
    assert run_once(ShipmentJob, LeaseRenewal()) == 5
    assert statuses() == {}
    waiting = broker.channel.queue_declare(shipping, passive=True).method.message_count
    arrived = order_ids(received(broker, shipping, waiting))
    assert set(arrived) == {"o1", "o2", "o3", "o4", "o5"}, arrived


class Unretried(ShipmentJob, abstract=True):
    """One attempt only."""

    max_attempts = 1


def test_publish_job__unroutable_destination_is_not_processed(broker, shipping):
    """With no queue bound for the destination a message is retried, then Error, naming the destination."""
    broker.channel.queue_unbind(shipping, f"{broker.prefix}.delay-delivery", routing_key=f"#.{shipping}")
    ship("o1", "o2")
    assert run_once(ShipmentJob, LeaseRenewal()) == 2
    assert set(statuses().values()) == {Status.SLEEPING}
    retry_now()
    assert run_once(Unretried, LeaseRenewal()) == 2
    rows = list(Shipment.queue_items())
    assert {(row.status, row.error_type) for row in rows} == {(Status.ERROR, NOT_PUBLISHED)}
    assert rows[0].error_message.startswith(f"No queue is bound for destination {shipping!r}")


def test_publish_job__delayed_message_to_a_missing_queue_is_not_sent(broker, shipping):
    """A delayed message is not sent when its destination queue does not exist (the delay levels would take it
    and drop it later); one without delay is refused as unroutable. Both stay, with their reasons."""
    broker.channel.queue_delete(shipping)
    ship("later", delay_seconds=1)
    ship("now")
    assert run_once(ShipmentJob, LeaseRenewal()) == 2
    rows = {row.message_id: row for row in Shipment.queue_items()}
    assert {row.status for row in rows.values()} == {Status.SLEEPING}
    assert rows["later"].error_message.startswith(f"The destination queue {shipping!r} does not exist")
    assert rows["now"].error_message.startswith(f"No queue is bound for destination {shipping!r}")
    level = broker.channel.queue_declare(f"{broker.prefix}.delay-level-00", passive=True)
    assert level.method.message_count == 0


def test_publish_job__missing_delay_infrastructure_is_named(broker):
    """Without the delay levels declared, every message of the run stays, its error naming the missing exchange."""
    ship("o1", "o2")
    try:
        assert run_once(ShipmentJob, LeaseRenewal()) == 2
    finally:
        disconnect()
    rows = list(Shipment.queue_items())
    assert {(row.status, row.error_type) for row in rows} == {(Status.SLEEPING, NOT_PUBLISHED)}
    assert f"NOT_FOUND - no exchange '{broker.prefix}.delay-delivery'" in rows[1].error_message


@pytest.mark.parametrize(
    ("attributes", "error"),
    [
        ({}, "Outbox.destination: A destination is a queue's name, not None."),
        ({"destination": "a.#"}, "Outbox.destination: Destination 'a.#': '*' and '#' are wildcards in a binding."),
        ({"destination": "a", "delay": timedelta(seconds=-1)}, "Outbox.delay: A delay cannot be negative"),
    ],
)
def test_publish_job__invalid_class_is_refused_at_definition(attributes, error):
    """A job without a valid destination or delay is a ConfigurationError naming the attribute."""
    with pytest.raises(ConfigurationError, match=error.replace(".", r"\.").replace("*", r"\*")):
        type("Outbox", (RabbitMQPublishJob,), {"message_class": Shipment, **attributes})


def test_publish_job__the_real_worker_command_publishes(broker, shipping, child_env):
    """``manage.py nexus_worker --burst --queue shipments --concurrency 2`` publishes every message once, runs
    in two threads at once, and exits 0."""
    ids = [f"o{n}" for n in range(6)]
    ship(*ids)
    env = {
        **child_env, "NEXUS_TEST_RABBITMQ_URL": broker.url, "NEXUS_TEST_RABBITMQ_PREFIX": broker.prefix,
        "NEXUS_TEST_BATCH": "2",
    }
    done = subprocess.run(
        [sys.executable, "-m", "django", "nexus_worker", "--burst", "--queue", "shipments", "--concurrency", "2"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    assert statuses() == {}
    assert order_ids(received(broker, shipping, 6)) == ids
    assert Shipment.job_runs().count() == 3
    assert " INFO pika." not in done.stderr  # pika's connection chatter, quiet at the default -v 1


def test_publish_job__pika_logs_its_info_at_verbosity_2(broker, shipping, child_env):
    """``-v 2`` lets pika's INFO and DEBUG records through, for when the connection itself is in question."""
    ship("o1")
    env = {**child_env, "NEXUS_TEST_RABBITMQ_URL": broker.url, "NEXUS_TEST_RABBITMQ_PREFIX": broker.prefix}
    done = subprocess.run(
        [sys.executable, "-m", "django", "nexus_worker", "--burst", "--queue", "shipments", "-v", "2"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    assert " INFO pika." in done.stderr
