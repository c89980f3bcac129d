"""The worker loop in process: what one ``Worker.run()`` does with the jobs it is given."""

from datetime import timedelta

import pytest

from nexus_queues import QueueJob, Status, enqueue_many
from nexus_queues.models import JobRun
from nexus_queues.worker.loop import Worker
from tests.damage import UNREADABLE_PAST, unreadable, write_raw
from tests.testapp.jobs import GreetingJob, PingJob
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Greeting, Inventory

pytestmark = pytest.mark.django_db(transaction=True)


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
