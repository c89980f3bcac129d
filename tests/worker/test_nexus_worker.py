"""``manage.py nexus_worker`` as real processes on the test database: signals, kills, lost connections, wake-ups,
its arguments and its log. What the loop decides is tested in process, in test_loop.py."""

import os
import signal
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import Status, abandon_expired_leases, enqueue, enqueue_many
from nexus_queues.models import JobRun
from tests.commands import kill_other_connections, reports, wait_until
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Greeting, Inventory, Product

pytestmark = pytest.mark.django_db(transaction=True)


def greetings(*names: str) -> list[Greeting]:
    return [Greeting(name=name, times=i) for i, name in enumerate(names)]


def started(files) -> bool:
    return any(words[0] == "started" for words in reports(files))


def test_nexus_worker__log_records_carry_the_correlation_id(manage):
    """Each run's log records name its correlation id, the one stored on the messages it leased."""
    enqueue(Product(sku="A", name="one"))
    command = manage("nexus_worker", "--burst", "--queue", "products")
    assert command.finish() == 0
    item = Product.queue_model.objects.get()
    assert item.status == Status.PROCESSED
    assert f"nexus_queues.worker [{item.correlation_id}] products: 1 leased, 1 processed" in command.log()


def test_nexus_worker__two_workers_never_process_a_message_twice(manage, files):
    """Two workers on one queue share it: every message processed exactly once. The worker that
    leases ping 0 is held until the other has processed every later batch, so both take part."""
    enqueue_many([Ping(n=n) for n in range(400)])
    env = {"NEXUS_TEST_BATCH": "10", "NEXUS_TEST_PING_GATE": "1"}
    workers = [manage("nexus_worker", "--queue", "pings", "--peek-delay", "0.1", **env) for _ in range(2)]
    wait_until(lambda: len(reports(files)) >= 390, "the free worker to process pings 10 to 399")
    files["gate"].touch()
    wait_until(lambda: len(reports(files)) >= 400, "400 pings processed")
    for worker in workers:
        worker.proc.send_signal(signal.SIGTERM)
        assert worker.finish() == 0
    lines = reports(files)
    assert Counter(int(words[1]) for words in lines) == Counter(range(400))
    assert len({words[2] for words in lines}) == 2, "the workers did not compete"
    assert not Ping.queue_model.objects.exists()


def test_nexus_worker__sigkill_mid_batch_leaves_leases_that_become_abandoned(manage, files):
    """A worker killed mid-batch loses nothing: its rows stay Leased, then Abandoned, never re-run."""
    enqueue_many(greetings("block", "a", "b", "c", "d"))
    worker = manage("nexus_worker", "--queue", "greetings")
    wait_until(lambda: started(files), "the blocking job to start", worker)
    worker.proc.send_signal(signal.SIGKILL)
    worker.finish()
    rows = Greeting.queue_model.objects.all()
    assert set(rows.values_list("status", flat=True)) == {Status.LEASED}
    run = JobRun.objects.get(queue="greetings")
    assert run.finished_at is None and run.leased == 5
    assert set(rows.values_list("correlation_id", flat=True)) == {run.correlation_id}
    abandon_expired_leases(timezone.now() + timedelta(minutes=31))
    assert list(rows.values_list("status", flat=True)) == [Status.ABANDONED] * 5
    seen = len(reports(files))
    assert manage("nexus_worker", "--burst", "--queue", "greetings").finish() == 0
    assert len(reports(files)) == seen
    assert rows.filter(status=Status.ABANDONED).count() == 5


@pytest.mark.engines("postgresql", "mysql")
@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_nexus_worker__survives_its_connections_killed_during_a_job(manage, files, concurrency):
    """Connections killed on the server mid-job: the job's own query fails (that message is an Error, its job having
    raised), the acknowledgement reconnects and is written, and the worker goes on."""
    enqueue_many(greetings("block-db", "a"))
    worker = manage("nexus_worker", "--queue", "greetings", "--peek-delay", "0.1", "--concurrency", concurrency)
    wait_until(lambda: started(files), "the blocking job to start", worker)
    assert kill_other_connections() >= 1
    files["gate"].touch()
    enqueue(Greeting(name="after", times=2))
    wait_until(lambda: ["after", "2"] in [words[:2] for words in reports(files)], "a later message processed", worker)
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0, worker.log()
    assert Counter(words[0] for words in reports(files)) == {"started": 1, "a": 1, "after": 1}
    first = JobRun.objects.get(correlation_id=reports(files)[0][3])
    assert (first.processed, first.errors, first.finished_at is not None) == (1, 1, True)
    rows = Greeting.queue_model.objects.all()
    assert list(rows.values_list("message__name", "status")) == [("block-db", Status.ERROR)]


@pytest.mark.engines("postgresql", "mysql")
def test_nexus_worker__heartbeat_reconnects_after_its_connection_is_killed(manage, files):
    """The heartbeat's connection killed on the server mid-job: it tries again after a short pause rather than a
    renewal interval later, reconnects and renews the lease again."""
    enqueue(Inventory(sku="slow", quantity=1))
    worker = manage("nexus_worker", "--queue", "inventory")
    wait_until(lambda: started(files), "the slow job to start", worker)
    leased_until = Inventory.queue_model.objects.get().lease_expires_at
    wait_until(lambda: Inventory.queue_model.objects.get().lease_expires_at > leased_until, "a first renewal", worker)
    assert kill_other_connections() >= 1
    renewed = Inventory.queue_model.objects.get().lease_expires_at
    def renewed_again() -> bool:
        return Inventory.queue_model.objects.get().lease_expires_at > renewed

    wait_until(renewed_again, "a renewal after the kill", worker)
    assert "Could not renew 1 lease(s)" in worker.log() and "retrying in 0.1 s" in worker.log()
    files["gate"].touch()
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0, worker.log()


def test_nexus_worker__sigterm_finishes_the_batch_in_hand_and_exits_0(manage, files):
    """SIGTERM stops leasing: the batch in hand is finished and acknowledged, the rest stays Pending."""
    enqueue_many(greetings("block", *["x"] * 14))
    worker = manage("nexus_worker", "--queue", "greetings")
    wait_until(lambda: started(files), "the blocking job to start", worker)
    worker.proc.send_signal(signal.SIGTERM)
    files["gate"].touch()
    assert worker.finish() == 0, worker.log()
    assert Greeting.queue_model.objects.pending().count() == 5
    assert Greeting.queue_model.objects.count() == 5
    assert JobRun.objects.get(queue="greetings").processed == 10


def test_nexus_worker__heartbeat_keeps_the_lease_of_a_long_job(manage, files):
    """A job running past its lease time keeps its lease (renewed) and finishes Processed."""
    enqueue(Inventory(sku="slow", quantity=1))
    worker = manage("nexus_worker", "--burst", "--queue", "inventory")
    wait_until(lambda: started(files), "the slow job to start", worker)
    first = Inventory.queue_model.objects.get().lease_expires_at
    wait_until(lambda: Inventory.queue_model.objects.get().lease_expires_at > first, "a renewed lease", worker)
    assert abandon_expired_leases(first + timedelta(milliseconds=1))["inventory"] == 0
    files["gate"].touch()
    assert worker.finish() == 0
    item = Inventory.queue_model.objects.get()
    assert (item.status, item.attempts) == (Status.PROCESSED, 1)


def test_nexus_worker__unknown_queue_is_a_clear_error(manage):
    """Naming a queue without a job fails at once, listing the queues that have one."""
    command = manage("nexus_worker", "--queue", "audits")
    assert command.finish() == 1
    assert "No job processes queue 'audits'" in command.log()


@pytest.mark.parametrize(("options", "runs"), [
    (("--queue", "greetings"), "queues greetings; no periodic jobs; no dispatch loop; 1 thread, until drained"),
    (("--queue", "greetings", "--periodic", "--with-dispatch"),
     "queues greetings; periodic jobs tests.testapp.jobs.Heartbeat, tests.testapp.jobs.weekly_report; dispatch loop"),
    (("--no-periodic", "--concurrency", "2"), "; no periodic jobs; no dispatch loop; 2 threads"),
], ids=["queue-only", "queue-and-periodic", "every-queue"])
def test_nexus_worker__runs_what_it_is_named_for_and_says_so(manage, options, runs):
    """With --queue a worker runs those queues' jobs and no periodic job unless --periodic; its first line says
    which queues, periodic jobs, dispatch loop and threads it runs."""
    command = manage("nexus_worker", "--burst", *options)
    assert command.finish() == 0
    started_line = next(line for line in command.log().splitlines() if "Worker started: " in line)
    assert runs in started_line


def test_nexus_worker__bad_options_are_refused(manage):
    """Argument errors name the option and the value."""
    command = manage("nexus_worker", "--concurrency", "0")
    assert command.finish() == 2
    assert "--concurrency: 0 is less than 1" in command.log()


def test_nexus_worker__enqueue_wakes_an_idle_worker(manage, files):
    """An enqueue wakes a worker sleeping a 600 s peek delay (NOTIFY on PostgreSQL, a local socket elsewhere)."""
    worker = manage("nexus_worker", "--queue", "greetings", "--peek-delay", "600")
    worker.wait_logged("Listening for wake-ups")
    assert "over 10 s" in worker.log()
    enqueue(Greeting(name="hello"))
    wait_until(lambda: reports(files), "the woken worker to process the message", worker)
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.finish() == 0


def test_nexus_worker__listen_off_means_polling(manage, files):
    """With --no-listen the worker polls: it opens no LISTEN connection and still processes."""
    worker = manage("nexus_worker", "--queue", "greetings", "--peek-delay", "0.1", "--no-listen")
    worker.wait_logged("Worker started")
    enqueue(Greeting(name="hello"))
    wait_until(lambda: reports(files), "the polling worker to process the message", worker)
    os.kill(worker.proc.pid, signal.SIGINT)
    assert worker.finish() == 0
    assert "Listening" not in worker.log()
