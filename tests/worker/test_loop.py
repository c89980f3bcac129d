"""The worker loop in process: what ``Worker.run()`` and each ``Worker.sweep()`` do, time moved by a fake clock."""

import logging
import os
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import (
    QueueJob,
    Status,
    abandon_expired_leases,
    enqueue,
    enqueue_many,
    set_processing_enabled,
    throughput,
)
from nexus_queues.conf import settings
from nexus_queues.models import JobRun, WorkerProcess
from nexus_queues.throughput import QueueMinute
from nexus_queues.worker.dispatch import Dispatcher
from nexus_queues.worker.loop import Worker
from tests.commands import reports
from tests.damage import UNREADABLE_PAST, table_missing, unreadable, write_raw
from tests.factories import LeasedFactory
from tests.testapp.jobs import DigestJob, GreetingJob, InventoryJob, PingJob, ProductJob
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Digest, Greeting, Inventory, Product

pytestmark = pytest.mark.django_db(transaction=True)
PEEK = "SELECT COUNT(*) FROM (SELECT"
"""How the worker's peek at a queue's Pending messages begins."""


class Unprintable(Exception):
    """An exception whose str() raises."""

    def __str__(self):
        raise RuntimeError("no text")


class UnstorableFailures(QueueJob, abstract=True):
    """Fails the inventory messages named nul, surrogate and unprintable with text no database stores as is."""

    message_class = Inventory

    def process(self, message):
        failures = {"nul": ValueError("stock\x00level"), "surrogate": ValueError("stock \udc80")}
        if message.sku == "unprintable":
            raise Unprintable()
        if message.sku in failures:
            raise failures[message.sku]


def test_worker__first_sweep_runs_the_jobs_whatever_the_peek_delay():
    """The first sweep reads which jobs are enabled, even with a peek delay longer than the machine's uptime."""
    enqueue_many([Greeting(name="hello", times=i) for i in range(3)])
    Worker(job_classes=[GreetingJob], burst=True, listen=False, peek_delay=timedelta(days=36500)).run()
    assert not Greeting.queue_model.objects.exists()


def test_worker__failures_the_database_cannot_store_as_is_cost_no_acknowledgement():
    """Failures holding NUL, a lone surrogate or a failing str() are stored escaped; the batch is acknowledged."""
    skus = ["a", "nul", "surrogate", "unprintable", "b"]
    enqueue_many([Inventory(sku=sku, quantity=1) for sku in skus])
    Worker(job_classes=[UnstorableFailures], burst=True, listen=False).run()
    rows = {row.message_id: row for row in Inventory.queue_model.objects.all()}
    assert {sku: rows[sku].status for sku in skus} == {
        "a": Status.PROCESSED, "nul": Status.ERROR, "surrogate": Status.ERROR, "unprintable": Status.ERROR,
        "b": Status.PROCESSED,
    }
    assert [rows[sku].error_message for sku in skus[1:4]] == [
        "stock\\x00level", "stock \\udc80", "<str() of Unprintable raised RuntimeError>"
    ]
    run = JobRun.objects.get()
    assert (run.leased, run.processed, run.errors, run.finished_at is not None) == (5, 2, 3, True)


def test_worker__a_row_python_cannot_read_costs_only_itself():
    """A Pending row holding a time Python cannot read becomes Error; its batch and the other queues are processed."""
    enqueue_many([Greeting(name="hello", times=i) for i in range(3)])
    bad = Greeting.queue_model.objects.values_list("pk", flat=True)[1]
    write_raw(Greeting.queue_model, bad, "process_at", unreadable(UNREADABLE_PAST))
    enqueue_many([Ping(n=n) for n in range(3)])
    Worker(job_classes=[GreetingJob, PingJob], burst=True, listen=False).run()
    assert list(Greeting.queue_model.objects.values_list("pk", "status")) == [(bad, Status.ERROR)]
    assert not Ping.queue_model.objects.exists()
    run = JobRun.objects.get(queue="greetings")
    assert (run.processed, run.leased - run.errors, run.finished_at is not None) == (2, 2, True)


class Abandoning(QueueJob, abstract=True):
    """Loses its lease mid-job: housekeeping an hour ahead abandons it while the greeting is processed."""

    message_class = Greeting

    def process(self, message: Greeting) -> None:
        abandon_expired_leases(timezone.now() + timedelta(hours=1))


class SmallPings(PingJob, abstract=True):
    """Pings ten at a time, so that a few hundred take many runs."""

    batch_size = 10


def greetings(*names: str) -> list[Greeting]:
    return [Greeting(name=name, times=i) for i, name in enumerate(names)]


def make_due(model: type) -> None:
    """Time passes: every Sleeping row of ``model`` is due now."""
    model.objects.filter(status=Status.SLEEPING).update(process_at=timezone.now() - timedelta(seconds=1))


def test_worker__burst_drains_the_queue(reported):
    """A burst processes every Pending message once and records each run with its correlation id."""
    enqueue_many(greetings(*["hello"] * 25))
    Worker(job_classes=[GreetingJob], burst=True, listen=False).run()
    lines = reports(reported)
    assert sorted(int(words[1]) for words in lines) == list(range(25))
    assert not Greeting.queue_model.objects.exists()
    runs = JobRun.objects.filter(queue="greetings")
    assert sorted(runs.values_list("leased", "processed")) == [(5, 5), (10, 10), (10, 10)]
    assert {words[3] for words in lines} == set(runs.values_list("correlation_id", flat=True))
    assert all(run.finished_at is not None and run.worker.endswith(f":{os.getpid()}") for run in runs)


def test_worker__errors_carry_tracebacks(reported):
    """A failing message becomes Error with its traceback and the run's correlation id; the rest of its batch
    is processed."""
    enqueue_many(greetings("a", "fail", "b"))
    Worker(job_classes=[GreetingJob], burst=True, listen=False).run()
    failed = Greeting.queue_model.objects.get()
    assert (failed.status, failed.error_type) == (Status.ERROR, "builtins.ValueError")
    assert failed.error_message == "cannot greet 1"
    assert 'raise ValueError(f"cannot greet' in failed.error_traceback
    assert sorted(words[0] for words in reports(reported)) == ["a", "b"]
    assert JobRun.objects.get(queue="greetings", correlation_id=failed.correlation_id).errors == 1


def test_worker__previous_message_is_the_last_processed_version(reported):
    """Inside a job, previous_message() is the version processed before (None the first time)."""
    enqueue(Product(sku="A", name="first"))
    Worker(job_classes=[ProductJob], burst=True, listen=False).run()
    enqueue(Product(sku="A", name="second"))
    Worker(job_classes=[ProductJob], burst=True, listen=False).run()
    assert [words[1:4] for words in reports(reported)] == [["A", "first", "None"], ["A", "second", "first"]]


def test_worker__batch_form_fails_only_its_bad_items(reported):
    """A job's process_batch gets the whole run; an item it maps to an exception becomes Error."""
    enqueue_many([Inventory(sku="A", quantity=1), Inventory(sku="B", quantity=-1), Inventory(sku="C", quantity=2)])
    Worker(job_classes=[InventoryJob], burst=True, listen=False).run()
    statuses = dict(Inventory.queue_model.objects.values_list("message_id", "status"))
    assert statuses == {"A": Status.PROCESSED, "B": Status.ERROR, "C": Status.PROCESSED}
    assert [words[:2] for words in reports(reported)] == [["inventory-batch", "3"]]


def test_worker__concurrency_runs_in_threads(reported):
    """With concurrency, runs go on in parallel threads and every message is processed once."""
    enqueue_many([Ping(n=n) for n in range(300)])
    Worker(job_classes=[SmallPings], burst=True, listen=False, concurrency=3).run()
    assert Counter(int(words[1]) for words in reports(reported)) == Counter(range(300))
    assert JobRun.objects.filter(queue="pings").count() == 30


def test_worker__a_lost_lease_is_not_completed(caplog):
    """Fenced completion: when the lease was lost mid-job, the worker logs it and leaves the row."""
    enqueue(Greeting(name="lost"))
    Worker(job_classes=[Abandoning], burst=True, listen=False).run()
    assert Greeting.queue_model.objects.get().status == Status.ABANDONED
    assert "Lease lost on 1 message(s)" in caplog.text
    assert JobRun.objects.get(queue="greetings").processed == 0


def test_worker__processing_switched_off_is_honoured():
    """A queue whose processing is off is left alone until it is switched back on."""
    enqueue_many(greetings("a", "b"))
    set_processing_enabled(Greeting, False)
    Worker(job_classes=[GreetingJob], burst=True, listen=False).run()
    assert Greeting.queue_model.objects.pending().count() == 2
    set_processing_enabled(Greeting, True)
    Worker(job_classes=[GreetingJob], burst=True, listen=False).run()
    assert not Greeting.queue_model.objects.exists()


def test_worker__enabled_jobs_are_read_again_after_a_peek_delay(clock):
    """A switch of processing reaches a running worker at its first sweep one peek delay later, not before."""
    worker = Worker(job_classes=[GreetingJob], listen=False, peek_delay=timedelta(seconds=5), clock=clock)
    set_processing_enabled(Greeting, False)
    worker.sweep()
    set_processing_enabled(Greeting, True)
    enqueue(Greeting(name="hello"))
    assert worker.sweep() == 5.0
    assert Greeting.queue_model.objects.pending().count() == 1
    clock.advance(5)
    assert worker.sweep() == 0
    assert not Greeting.queue_model.objects.exists()


def test_worker__a_queue_that_fails_backs_off_alone(clock, caplog):
    """A queue whose table cannot be read is logged by name and skipped until its backoff has passed; the other
    queues go on."""
    caplog.set_level(logging.INFO, "nexus_queues.breaker")
    worker = Worker(job_classes=[GreetingJob, PingJob], listen=False, clock=clock)
    enqueue(Greeting(name="hello"))
    enqueue_many([Ping(n=n) for n in range(3)])
    with table_missing(Greeting.queue_model):
        assert worker.sweep() == 0
        assert "Queue greetings failed" in caplog.text
    assert not Ping.queue_model.objects.exists()
    assert worker.sweep() == pytest.approx(0.1)
    assert Greeting.queue_model.objects.pending().count() == 1
    clock.advance(0.1)
    assert worker.sweep() == 0
    assert not Greeting.queue_model.objects.exists()
    assert "Queue greetings recovered after 1 failure(s)." in caplog.text


@pytest.mark.engines("postgresql", "mysql")
def test_worker__a_woken_queue_that_ran_dry_sleeps_without_a_peek(clock):
    """A wake-up's run that leases less than a batch found the queue dry, and a message stored later wakes the worker
    again: the sweep sleeps, with no peek (COUNT) after the run. A run that leases a whole batch sweeps again at once,
    and that sweep peeks for the rest."""
    worker = Worker(job_classes=[PingJob], periodic_job_classes=[], clock=clock)
    worker.wakeups.connect()
    try:
        worker.sweep()  # the first sweep's housekeeping and settings, on an empty queue
        enqueue(Ping(n=1))
        woken = worker.wakeups.wait(5)
        with CaptureQueriesContext(connection) as queries:
            pause = worker.sweep(woken=woken)
        assert pause is not None and pause > 0
        assert not Ping.queue_model.objects.exists()
        assert [q["sql"] for q in queries.captured_queries if q["sql"].startswith(PEEK)] == []

        enqueue_many([Ping(n=n) for n in range(PingJob.batch_size + 1)])
        assert worker.sweep(woken=worker.wakeups.wait(5)) == 0
        assert Ping.queue_model.objects.count() == 1
        with CaptureQueriesContext(connection) as queries:
            worker.sweep()
        assert not Ping.queue_model.objects.exists()
        assert any(q["sql"].startswith(PEEK) for q in queries.captured_queries)
    finally:
        worker.wakeups.close()


def test_worker__housekeeping_runs_once_per_interval(clock):
    """Expired leases become Abandoned at the first sweep, then again only once the interval has passed."""
    interval = settings.WORKER_HOUSEKEEPING_INTERVAL.total_seconds()
    worker = Worker(job_classes=[GreetingJob], listen=False, clock=clock)
    expired = timezone.now() - timedelta(seconds=1)
    LeasedFactory.create(queue=Greeting, lease_expires_at=expired)
    worker.sweep()
    assert Greeting.queue_model.objects.get().status == Status.ABANDONED
    LeasedFactory.create(queue=Greeting, lease_expires_at=expired)
    clock.advance(interval - 1)
    worker.sweep()
    assert Greeting.queue_model.objects.filter(status=Status.LEASED).count() == 1
    clock.advance(1)
    worker.sweep()
    assert set(Greeting.queue_model.objects.values_list("status", flat=True)) == {Status.ABANDONED}


def test_worker__housekeeping_forgets_old_processes(clock):
    """A sweep's housekeeping deletes the rows of processes gone longer than WORKER_PROCESS_RETENTION."""
    long_ago = timezone.now() - settings.WORKER_PROCESS_RETENTION - timedelta(minutes=1)
    WorkerProcess.objects.create(kind="worker", host="h", pid=1, version="0", started_at=long_ago,
                                 last_seen_at=long_ago, doing="sleeping")
    Worker(job_classes=[GreetingJob], listen=False, clock=clock).sweep()
    assert not WorkerProcess.objects.exists()


def test_worker__housekeeping_folds_old_throughput_minutes(clock):
    """A sweep's housekeeping folds minutes older than a day into the queue's all-time row."""
    old = timezone.now() - throughput.MINUTES_KEPT - timedelta(hours=1)
    throughput.record("greetings", old, throughput.Throughput(processed=4, runs=1), using="default")
    Worker(job_classes=[GreetingJob], listen=False, clock=clock).sweep()
    assert list(QueueMinute.objects.values_list("minute", "processed")) == [(throughput.ALL_TIME, 4)]


def test_worker__returned_datetime_runs_the_message_again_then(reported):
    """A job that returns a time gets the message again once that time is due (the worker dispatching it)."""
    worker = Worker(job_classes=[GreetingJob], listen=False, dispatcher=Dispatcher())
    enqueue(Greeting(name="later"))
    worker.sweep()
    assert Greeting.queue_model.objects.get().status == Status.SLEEPING
    make_due(Greeting.queue_model)
    worker.sweep()
    assert not Greeting.queue_model.objects.exists()
    runs = JobRun.objects.filter(queue="greetings").order_by("started_at")
    assert [(r.processed, r.rescheduled) for r in runs] == [(0, 1), (1, 0)]
    assert len(reports(reported)) == 2


def test_worker__retries_then_error(reported):
    """A message failing every time runs max_attempts times, Sleeping between attempts, then stays Error."""
    worker = Worker(job_classes=[PingJob], listen=False, dispatcher=Dispatcher())
    enqueue(Ping(n=-1))
    for _ in range(2):
        worker.sweep()
        assert Ping.queue_model.objects.get().status == Status.SLEEPING
        make_due(Ping.queue_model)
    worker.sweep()
    item = Ping.queue_model.objects.get()
    assert (item.status, item.attempts) == (Status.ERROR, 3)
    assert "ping -1 failed" in item.error_message
    assert [words[0] for words in reports(reported)] == ["ping-failed"] * 3


@pytest.mark.django_db(transaction=True)
def test_worker__scheduled_job_leases_only_when_due_or_asked_to_start(reported):
    """A scheduled job never run drains once when its first worker starts; then it leaves Pending messages alone
    until its next tick, or until start_processing asks for a drain now."""
    enqueue(Digest(text="before"))
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True).run()
    enqueue(Digest(text="between"))
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True).run()
    assert [words[1] for words in reports(reported)] == ["before"]
    assert Digest.queue_items().get().status == Status.PENDING
    enqueue(Digest(text="now"), start_processing=True)
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True).run()
    assert [words[1] for words in reports(reported)] == ["before", "between", "now"]
    assert not Digest.queue_items().exists()


@pytest.mark.django_db(transaction=True)
def test_worker__switched_off_scheduled_job_is_not_started(reported):
    """start_processing does not start a job an operator switched off, nor when it is switched on again."""
    enqueue(Digest(text="first"))
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True).run()  # its first drain: a recorded run
    set_processing_enabled(Digest, False)
    enqueue(Digest(text="held"), start_processing=True)
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True).run()
    assert Digest.queue_items().get().status == Status.PENDING and len(reports(reported)) == 1
    set_processing_enabled(Digest, True)
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True).run()
    assert Digest.queue_items().get().status == Status.PENDING and len(reports(reported)) == 1


@pytest.mark.django_db(transaction=True)
def test_worker__switching_off_forgets_a_standing_start_request(reported):
    """A start request made before the job was switched off does not start it when it is switched on."""
    enqueue(Digest(text="first"))
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True).run()
    enqueue(Digest(text="asked"), start_processing=True)
    set_processing_enabled(Digest, False)
    set_processing_enabled(Digest, True)
    Worker(job_classes=[DigestJob], periodic_job_classes=[], burst=True).run()
    assert [words[1] for words in reports(reported)] == ["first"]


@pytest.mark.django_db(transaction=True)
def test_worker__switched_off_scheduled_job_with_a_passed_tick_does_not_spin():
    """A switched-off queue's passed tick does not make an idle worker sweep without sleeping."""
    set_processing_enabled(Digest, False)  # never run: its first tick (from 1970) has passed
    worker = Worker(job_classes=[DigestJob], periodic_job_classes=[], listen=False)
    try:
        assert worker.sweep() == pytest.approx(worker.peek_delay.total_seconds(), abs=0.5)
    finally:
        worker.wakeups.close()


@override_settings(NEXUS_QUEUES={"JOB_RUN_RETENTION": timedelta(days=1)})
def test_worker__housekeeping_deletes_old_job_runs(clock, caplog):
    """The worker's housekeeping deletes job runs past the retention and logs how many."""
    JobRun.objects.create(job="tests.Job", correlation_id="old", worker="w:1",
                          started_at=timezone.now() - timedelta(days=2))
    recent = JobRun.objects.create(job="tests.Job", correlation_id="new", worker="w:1", started_at=timezone.now())
    with caplog.at_level(logging.INFO, logger="nexus_queues.worker"):
        Worker(job_classes=[GreetingJob], listen=False, clock=clock).sweep()
    assert list(JobRun.objects.values_list("pk", flat=True)) == [recent.pk]  # not old
    assert "Purged 1 job run(s) older than 1 day, 0:00:00 on default." in caplog.text
