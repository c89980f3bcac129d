"""The delay infrastructure in the real broker, read back with ``rabbitmqctl`` and compared with the reference."""

from __future__ import annotations

import os
import subprocess
import sys

import pika
import pytest

from nexus_queues.contrib.rabbitmq.delays import (
    TopologyConflict,
    bind_endpoint,
    declare_delay_infrastructure,
    delivery_exchange,
    level_exchange,
)
from tests.commands import PATIENCE, ROOT
from tests.contrib.rabbitmq.conftest import Broker
from tests.contrib.rabbitmq.topology import drawn, read_back

DECLARE = """
import sys
from nexus_queues.contrib.rabbitmq.connections import connect
from nexus_queues.contrib.rabbitmq.delays import bind_endpoint, declare_delay_infrastructure
url, prefix, endpoint = sys.argv[1:]
connection = connect(url)
channel = connection.channel()
print("ready", flush=True)
sys.stdin.readline()
declare_delay_infrastructure(channel, prefix)
bind_endpoint(channel, endpoint, prefix)
connection.close()
"""

PROCESSES = 4


def test_declare_delay_infrastructure__the_references_drawing(broker: Broker) -> None:
    """28 topic exchanges and queues (TTL 2^n s, dead-lettered to level n - 1, level 0 to delivery), each
    level's two bindings with its wildcards, the delivery exchange, and an endpoint bound with ``#.<name>``."""
    endpoint = broker.name("orders")
    declare_delay_infrastructure(broker.channel)
    bind_endpoint(broker.channel, endpoint)
    assert read_back(broker.prefix) == drawn(broker.prefix, (endpoint,))


def test_declare_delay_infrastructure__twice_and_from_several_processes_at_once(broker: Broker) -> None:
    """Four processes declaring at the same moment, on a broker without the infrastructure, then this one
    twice more, leave exactly the drawing."""
    endpoint = broker.name("orders")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", DECLARE, broker.url, broker.prefix, endpoint],
            env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(PROCESSES)
    ]
    try:
        for proc in procs:  # all connected before any declares
            assert proc.stdout and proc.stdout.readline() == "ready\n", proc.communicate(timeout=PATIENCE)
        for proc in procs:
            assert proc.stdin
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            _, stderr = proc.communicate(timeout=PATIENCE)
            assert proc.returncode == 0, stderr
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    declare_delay_infrastructure(broker.channel)
    declare_delay_infrastructure(broker.channel)
    assert read_back(broker.prefix) == drawn(broker.prefix, (endpoint,))


def test_declare_delay_infrastructure__a_conflicting_queue(broker: Broker) -> None:
    """A level's queue that exists with another TTL is a clear error naming it and the argument, the broker's
    refusal its cause; the queue keeps its messages."""
    name = level_exchange(3, broker.prefix)
    broker.channel.queue_declare(name, durable=True, arguments={"x-message-ttl": 1234})
    broker.channel.basic_publish("", name, b"kept", pika.BasicProperties(delivery_mode=2))
    with pytest.raises(TopologyConflict) as raised:
        declare_delay_infrastructure(broker.connection.channel())
    error = raised.value
    assert (error.kind, error.name) == ("queue", name)
    assert f"queue {name!r} already exists" in str(error)
    assert "inequivalent arg 'x-message-ttl'" in str(error)
    assert "received '8000' but current is '1234'" in str(error)
    assert isinstance(error.__cause__, pika.exceptions.ChannelClosedByBroker)
    assert error.__cause__.reply_code == 406
    assert broker.connection.channel().queue_declare(name, passive=True).method.message_count == 1


def test_declare_delay_infrastructure__a_conflicting_exchange(broker: Broker) -> None:
    """A delivery exchange of another type is a clear error naming it."""
    broker.channel.exchange_declare(delivery_exchange(broker.prefix), exchange_type="direct")
    with pytest.raises(TopologyConflict, match="exchange '.*delay-delivery' already exists.*'type'") as raised:
        declare_delay_infrastructure(broker.connection.channel())
    assert raised.value.kind == "exchange"


def test_bind_endpoint__a_conflicting_queue(broker: Broker) -> None:
    """An endpoint queue that exists with other arguments is a clear error naming it."""
    declare_delay_infrastructure(broker.channel)
    endpoint = broker.name("orders")
    broker.channel.queue_declare(endpoint, durable=True, arguments={"x-max-length": 10})
    with pytest.raises(TopologyConflict, match=f"queue '{endpoint}' already exists.*x-max-length"):
        bind_endpoint(broker.connection.channel(), endpoint)
