"""The live workers as real processes: ``nexus_worker`` and ``nexus_dispatch`` register, beat, say what they are
doing, are marked stopped on SIGTERM and show as gone after a SIGKILL; health sees them."""

import signal
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

import nexus_queues
from nexus_queues import enqueue, enqueue_many
from nexus_queues.health import queue_health
from nexus_queues.messages import HealthStatus
from nexus_queues.processes import ProcessState, WorkerProcess
from tests.commands import reports, wait_until
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db(transaction=True)

QUICK = {"NEXUS_TEST_HEARTBEAT_INTERVAL": "0.1"}
"""Heartbeats every 0.1 s in the processes these tests start."""


def registered(command) -> WorkerProcess:
    """The row of ``command``'s process, once it has registered."""
    rows = WorkerProcess.objects.filter(pid=command.proc.pid)
    wait_until(rows.exists, f"process {command.proc.pid} to register", command)
    return rows.get()


def test_nexus_worker__registers_beats_shows_its_run_and_is_marked_stopped_on_sigterm(manage, files):
    """A worker registers with its queues, pid and concurrency; its heartbeat moves on and names the run in hand;
    SIGTERM marks it stopped."""
    enqueue(Greeting(name="block", times=1))
    worker = manage("nexus_worker", "--queue", "greetings", "--queue", "pings", "--concurrency", "2", **QUICK)
    row = registered(worker)
    assert (row.kind, row.host, row.concurrency, row.version, row.dispatches, row.burst) == (
        "worker", socket.gethostname(), 2, nexus_queues.__version__, False, False
    )
    assert sorted(row.queues.values_list("queue", flat=True)) == ["greetings", "pings"]
    wait_until(lambda: any(words[0] == "started" for words in reports(files)), "the blocking job to start", worker)
    cid = reports(files)[0][3]

    def shows_the_run() -> bool:
        row.refresh_from_db()
        return row.doing == "running" and row.runs == [{"queue": "greetings", "correlation_id": cid}]

    wait_until(shows_the_run, "the heartbeat to show the run in hand", worker)
    first_seen = row.last_seen_at
    wait_until(lambda: WorkerProcess.objects.get(pk=row.pk).last_seen_at > first_seen, "a later heartbeat", worker)
    files["gate"].touch()
    wait_until(lambda: WorkerProcess.objects.get(pk=row.pk).runs == [], "the run to leave its hands", worker)
    assert row.state(timezone.now()) == ProcessState.LIVE
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0, worker.log()
    row.refresh_from_db()
    assert row.stopped_at is not None and row.doing == "stopped"
    assert row.state(timezone.now() + timedelta(days=1)) == ProcessState.STOPPED


def test_nexus_worker__sigkill_shows_gone_and_its_queue_unhealthy(manage, settings):
    """A killed worker is never marked stopped: it shows as gone once WORKER_GONE_AFTER passes, and its queue's
    Pending messages are unhealthy after the grace."""
    worker = manage("nexus_worker", "--queue", "greetings", **QUICK)
    row = registered(worker)
    worker.proc.send_signal(signal.SIGKILL)
    worker.finish()
    enqueue_many([Greeting(name="waiting", times=1)])
    row.refresh_from_db()
    assert row.stopped_at is None
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "WORKER_GONE_AFTER": timedelta(seconds=0.5),
                             "HEALTH_NO_WORKER_GRACE": timedelta(seconds=0.5)}
    wait_until(lambda: row.state(timezone.now()) == ProcessState.GONE, "the killed worker to show as gone")
    wait_until(lambda: queue_health(Greeting).status == HealthStatus.UNHEALTHY, "greetings to turn unhealthy")
    assert queue_health(Greeting).reasons[0].startswith("Pending messages but no live worker for ")


def test_nexus_dispatch__registers_as_a_dispatch_loop_and_keeps_sleeping_messages_healthy(manage, settings):
    """``nexus_dispatch`` registers as a dispatch loop; while it is live a long Sleeping message is healthy, once it
    stopped the queue turns unhealthy after the grace."""
    enqueue_many([Greeting(name="later", times=1)], at=timezone.now() + timedelta(days=1))
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "HEALTH_NO_WORKER_GRACE": timedelta(seconds=0.5)}
    dispatch = manage("nexus_dispatch", **QUICK)
    row = registered(dispatch)
    assert (row.kind, row.dispatches, list(row.queues.all())) == ("dispatch", True, [])
    wait_until(lambda: timezone.now() - Greeting.queue_model.objects.get().updated_at > timedelta(seconds=0.5),
               "the message to sleep past the grace")
    assert queue_health(Greeting).status == HealthStatus.HEALTHY
    dispatch.proc.send_signal(signal.SIGTERM)
    assert dispatch.finish() == 0, dispatch.log()
    assert WorkerProcess.objects.get(pk=row.pk).stopped_at is not None
    wait_until(lambda: queue_health(Greeting).status == HealthStatus.UNHEALTHY, "greetings to turn unhealthy")
    assert queue_health(Greeting).reasons[0].startswith("Sleeping messages but no live dispatch loop for ")


def test_nexus_worker__with_dispatch_counts_as_a_dispatch_loop(manage):
    worker = manage("nexus_worker", "--queue", "greetings", "--with-dispatch", **QUICK)
    row = registered(worker)
    assert (row.kind, row.dispatches) == ("worker", True)
    assert WorkerProcess.objects.dispatching().live(timezone.now()).filter(pk=row.pk).exists()
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0, worker.log()


def test_nexus_worker__burst_registers_and_is_stopped_when_done(manage, files):
    enqueue(Greeting(name="once", times=1))
    assert manage("nexus_worker", "--burst", "--queue", "greetings", **QUICK).finish() == 0
    row = WorkerProcess.objects.get()
    assert row.burst and row.stopped_at is not None and row.doing == "stopped"
    assert list(row.queues.values_list("queue", flat=True)) == ["greetings"]
    assert [words[:2] for words in reports(files)] == [["once", "1"]]
