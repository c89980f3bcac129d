"""``manage.py nexus_rabbitmq_consume`` as a real process on the test database and the real broker: its
arguments, SIGKILL and restart, SIGTERM, and its connection closed under it."""

from __future__ import annotations

import signal
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.commands import PATIENCE, Command, Commands, wait_until
from tests.testapp.queues import Arrival

from .conftest import Broker
from .test_consuming import arrival, publish, ready

pytestmark = pytest.mark.django_db(transaction=True)

Manage = Callable[..., Command]


@pytest.fixture
def source(broker: Broker) -> str:
    """A durable AMQP queue of this test's (and its ``.invalid`` queue, marked for deletion)."""
    name = broker.name("in")
    broker.name("in.invalid")
    broker.channel.queue_declare(name, durable=True)
    return name


@pytest.fixture
def manage(child_env: dict[str, str], tmp_path: Path) -> Iterator[Manage]:
    """Start ``python -m django <args>`` on the test database; killed at the end if still running."""
    commands = Commands(child_env, tmp_path)
    yield commands.start
    commands.kill_the_rest()


def consume(manage: Manage, source: str, *args: str) -> Command:
    return manage("nexus_rabbitmq_consume", "--from", source, "--queue", "arrivals", *args)


def stored() -> Counter[str]:
    """How many rows each message id of the arrivals queue has."""
    return Counter(Arrival.queue_model.objects.values_list("message_id", flat=True))


def drain(broker: Broker, queue: str) -> set[str]:
    """Take every ready message off ``queue``; their arrival ids."""
    ids = set()
    while True:
        method, _, body = broker.channel.basic_get(queue, auto_ack=True)
        if method is None:
            return ids
        ids.add(Arrival.model_validate_json(body).arrival_id)


def test_nexus_rabbitmq_consume__an_unknown_queue_names_the_known_ones():
    """``--queue`` naming no nexus queue is an error that lists the queues there are."""
    with pytest.raises(CommandError, match=r"No queue named 'nowhere'\. Known queues: .*arrivals"):
        call_command("nexus_rabbitmq_consume", "--from", "anything", "--queue", "nowhere")


@pytest.mark.parametrize(("prefetch", "problem"), [("0", "0 is less than 1"), ("65536", "more than 65535"),
                                                   ("ten", "'ten' is not an integer")])
def test_nexus_rabbitmq_consume__a_bad_prefetch_is_refused(prefetch, problem):
    """``--prefetch`` is 1 to 65535, AMQP's range; anything else is an error naming the option."""
    with pytest.raises(CommandError, match=f"--prefetch: .*{problem}"):
        call_command("nexus_rabbitmq_consume", "--from", "anything", "--queue", "arrivals", "--prefetch", prefetch)


def test_nexus_rabbitmq_consume__an_unknown_invalid_mode_is_an_error(settings):
    """``INVALID_MESSAGES`` set to something the consumer does not do is a command error naming the choices."""
    settings.NEXUS_RABBITMQ = {"INVALID_MESSAGES": "drop"}
    with pytest.raises(CommandError, match="'drop'; use one of dead-letter, reject"):
        call_command("nexus_rabbitmq_consume", "--from", "anything", "--queue", "arrivals")


def test_nexus_rabbitmq_consume__a_missing_amqp_queue_is_an_error(broker, manage):
    """``--from`` an AMQP queue the broker does not have: exit 1 with an error naming it."""
    missing = broker.name("missing")
    command = consume(manage, missing)
    assert command.finish() == 1
    assert f"CommandError: The AMQP queue '{missing}' does not exist" in command.log()


def test_nexus_rabbitmq_consume__sigkill_mid_stream_then_restart_stores_each_once(broker, source, manage):
    """A consumer killed with SIGKILL mid-stream, then started again: every message is in the nexus queue once,
    and the AMQP queue is drained."""
    publish(broker, source, *(arrival(n) for n in range(3000)))
    first = consume(manage, source, "--prefetch", "50")
    wait_until(lambda: Arrival.queue_model.objects.count() >= 500, "500 arrivals stored", first)
    first.proc.send_signal(signal.SIGKILL)
    first.finish()
    assert Arrival.queue_model.objects.count() < 3000, "the kill came after the stream, not in it"
    second = consume(manage, source, "--prefetch", "50")
    wait_until(lambda: Arrival.queue_model.objects.count() == 3000, "3000 arrivals stored", second)
    second.proc.send_signal(signal.SIGTERM)
    assert second.finish() == 0, second.log()
    assert stored() == Counter(f"a{n}" for n in range(3000))
    assert ready(broker, source) == 0


def test_nexus_rabbitmq_consume__sigterm_stops_after_the_batch(broker, source, manage):
    """SIGTERM mid-stream: exit 0; what was stored was acknowledged, the rest is back in the AMQP queue."""
    publish(broker, source, *(arrival(n) for n in range(2000)))
    command = consume(manage, source, "--prefetch", "50")
    wait_until(lambda: Arrival.queue_model.objects.count() >= 200, "200 arrivals stored", command)
    command.proc.send_signal(signal.SIGTERM)
    assert command.finish() == 0, command.log()
    assert "Consumer stopped." in command.log()
    kept = stored()
    left = drain(broker, source)
    assert max(kept.values()) == 1
    assert not left & set(kept), "a stored message was not acknowledged"
    assert left | set(kept) == {f"a{n}" for n in range(2000)}, "a message was lost"


def test_nexus_rabbitmq_consume__reconnects_when_its_connection_is_closed(broker, source, manage):
    """The broker closes the consumer's connection: it logs the outage once, reconnects, and goes on."""
    publish(broker, source, *(arrival(n) for n in range(100)))
    command = consume(manage, source)
    wait_until(lambda: Arrival.queue_model.objects.count() == 100, "the first 100 stored", command)
    _close_connection_named(source)
    command.wait_logged("The broker is away")
    publish(broker, source, *(arrival(n) for n in range(100, 200)))
    wait_until(lambda: Arrival.queue_model.objects.count() == 200, "the next 100 stored", command)
    command.wait_logged("The broker is back")
    command.proc.send_signal(signal.SIGTERM)
    assert command.finish() == 0, command.log()
    assert command.log().count("The broker is away") == 1
    assert stored() == Counter(f"a{n}" for n in range(200))
    assert ready(broker, source) == 0


def _close_connection_named(part: str) -> None:
    """Close, on the broker, the one connection whose name contains ``part``."""
    listed = _rabbitmqctl("list_connections", "-q", "--no-table-headers", "pid", "client_properties")
    [pid] = [line.split("\t")[0] for line in listed.splitlines() if part in line]
    _rabbitmqctl("close_connection", pid, "closed by the test")


def _rabbitmqctl(*args: str) -> str:
    done = subprocess.run(["rabbitmqctl", *args], capture_output=True, text=True, timeout=PATIENCE, check=True)
    return done.stdout
