"""``manage.py nexus_rabbitmq_consume`` among the live workers: a real consumer process registers as a consumer of the
queue it stores into; while ``<from>.invalid`` refuses its invalid bodies, its row, the admin and the queue's health
say how many it holds and why; killed, it shows as gone."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from health_check.exceptions import ServiceUnavailable, ServiceWarning

from nexus_queues.contrib.health_checks import QueueCheck
from nexus_queues.health import queue_health
from nexus_queues.messages import HealthStatus
from nexus_queues.processes import ProcessState, WorkerProcess
from nexus_queues.status import Status
from tests.commands import Command, Commands, wait_until
from tests.contrib.rabbitmq.conftest import Broker, broker, rabbitmq  # noqa: F401  (the broker fixture)
from tests.testapp.queues import Arrival

from .test_consumer_dead_letter import VALID, _policy_name, _rabbitmqctl, bodies, counts, publish, refuse_publishes

pytestmark = pytest.mark.django_db(transaction=True)

Manage = Callable[..., Command]

QUICK = {"NEXUS_TEST_HEARTBEAT_INTERVAL": "0.1", "NEXUS_TEST_RABBITMQ_MAX_BACKOFF": "0.5"}
"""Heartbeats every 0.1 s, and a held body offered again within 0.5 s, in the consumers these tests start."""


@pytest.fixture
def source(broker: Broker) -> Iterator[str]:  # noqa: F811
    """An AMQP queue of this test's whose ``.invalid`` queue refuses every publish (the policy dropped after)."""
    name = broker.name("in")
    broker.name("in.invalid")
    broker.channel.queue_declare(name)
    refuse_publishes(broker, name)
    yield name
    _rabbitmqctl("clear_policy", _policy_name(name), check=False)


@pytest.fixture
def manage(child_env: dict[str, str], tmp_path: Path) -> Iterator[Manage]:
    """Start ``python -m django <args>`` on the test database; killed at the end if still running."""
    commands = Commands(child_env, tmp_path)
    yield commands.start
    commands.kill_the_rest()


def consume(manage: Manage, broker: Broker, source: str, prefetch: int) -> Command:  # noqa: F811
    return manage("nexus_rabbitmq_consume", "--from", source, "--queue", "arrivals", "--prefetch", str(prefetch),
                  NEXUS_TEST_RABBITMQ_PREFIX=broker.prefix, **QUICK)


def holding(command: Command, held: int) -> WorkerProcess:
    """The row of ``command``'s consumer once its heartbeat says it holds ``held`` invalid bodies."""
    rows = WorkerProcess.objects.filter(pid=command.proc.pid, held=held)
    wait_until(rows.exists, f"consumer {command.proc.pid} to show {held} held", command)
    return rows.get()


def processed_as_a_job_would() -> None:
    """The stored arrivals processed: Pending rows that no job processes make the queue unhealthy on their own, and
    these tests look at what the consumer's held bodies do."""
    Arrival.queue_model.objects.update(status=Status.PROCESSED)


def consumer_reasons() -> list[str]:
    return [reason for reason in queue_health(Arrival).reasons if reason.startswith("consumer ")]


@pytest.mark.parametrize(("prefetch", "status", "raised"), [
    (100, HealthStatus.DEGRADED, ServiceWarning), (1, HealthStatus.UNHEALTHY, ServiceUnavailable),
], ids=["degraded", "unhealthy_at_prefetch"])
def test_nexus_rabbitmq_consume__held_bodies_show_in_the_live_workers_and_the_queue_health(
    broker, source, manage, admin_client, prefetch, status, raised  # noqa: F811
):
    """A consumer registers as a consumer of its queue; while it holds an invalid body ``<from>.invalid`` refused,
    its row, the admin's live workers and dashboard, and the queue's health check say so and why: degraded, or
    unhealthy once ``prefetch`` bodies are held. Once the queue takes the body they are healthy again; SIGTERM
    marks the consumer stopped."""
    publish(broker, source, bodies(Arrival))
    command = consume(manage, broker, source, prefetch)
    row = holding(command, 1)
    processed_as_a_job_would()
    assert (row.kind, row.host, row.concurrency, row.health) == ("consumer", socket.gethostname(), prefetch, status)
    assert list(row.queues.values_list("queue", flat=True)) == ["arrivals"]
    assert f"{source}.invalid refused them (nack" in row.health_reason
    health = queue_health(Arrival)
    assert health.status == status
    assert consumer_reasons() == [f"consumer {row.host}:{row.pid}: {row.health_reason}"]
    with pytest.raises(raised, match=r"1 invalid body\(ies\) held unacknowledged"):
        QueueCheck(queue="arrivals").run()
    if prefetch == 1:
        assert "nothing more is consumed" in row.health_reason
        assert Arrival.queue_model.objects.count() == VALID // 2, "the broker sent more than prefetch"
    for page in ("admin:nexus_queues_workerprocess_changelist", "admin:nexus_queues_dashboard"):
        text = admin_client.get(reverse(page)).content.decode()
        assert "consumer" in text and "1 invalid body(ies) held unacknowledged" in text, page
    _rabbitmqctl("clear_policy", _policy_name(source))
    holding(command, 0)
    wait_until(lambda: counts(broker, f"{source}.invalid") == 1, "the held body dead-lettered", command)
    wait_until(lambda: not WorkerProcess.objects.get(pk=row.pk).health_reason, "the consumer healthy again", command)
    assert consumer_reasons() == []
    command.proc.send_signal(signal.SIGTERM)
    assert command.finish() == 0, command.log()
    row.refresh_from_db()
    assert (row.doing, row.state(timezone.now()), row.held) == ("stopped", ProcessState.STOPPED, 0)


def test_nexus_rabbitmq_consume__sigkill_shows_gone_and_leaves_the_queue_health(broker, source, manage, settings):  # noqa: F811
    """A consumer killed while it holds an invalid body shows as gone after WORKER_GONE_AFTER, like a worker; its
    held body goes back to the source queue, and the queue's health no longer counts it."""
    publish(broker, source, [b"not json"])
    command = consume(manage, broker, source, 100)
    row = holding(command, 1)
    assert queue_health(Arrival).status == HealthStatus.DEGRADED
    command.proc.send_signal(signal.SIGKILL)
    command.finish()
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "WORKER_GONE_AFTER": timedelta(seconds=0.5)}
    wait_until(lambda: row.state(timezone.now()) == ProcessState.GONE, "the killed consumer to show as gone")
    assert row.stopped_at is None
    assert consumer_reasons() == []
    wait_until(lambda: counts(broker, source) == 1, "the held body back in the source queue")


def test_nexus_rabbitmq_consume__is_not_a_worker_of_its_queue(broker, source, manage, settings):  # noqa: F811
    """A live consumer stores into its queue but runs no job: Pending messages still say no live worker serves it,
    and the metrics count no worker."""
    from nexus_queues.contrib.prometheus.figures import live_workers
    from tests.testapp.queues import Greeting

    command = manage("nexus_rabbitmq_consume", "--from", source, "--queue", "greetings",
                     NEXUS_TEST_RABBITMQ_PREFIX=broker.prefix, **QUICK)
    wait_until(WorkerProcess.objects.filter(pid=command.proc.pid, kind="consumer").exists, "the consumer", command)
    publish(broker, source, [b'{"name": "waiting", "times": 1}'])
    wait_until(lambda: Greeting.queue_model.objects.count() == 1, "the greeting stored", command)
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "HEALTH_NO_WORKER_GRACE": timedelta(seconds=0.2)}
    wait_until(lambda: queue_health(Greeting).status == HealthStatus.UNHEALTHY, "greetings unhealthy", command)
    assert queue_health(Greeting).reasons[0].startswith("Pending messages but no live worker")
    assert live_workers(["greetings"], "default", timezone.now()) == {"greetings": 0}
