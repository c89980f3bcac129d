"""A worker draining a queue writes each run's acknowledgement with the next run's claim (PostgreSQL: one statement
and one commit for both); every run is still acknowledged once, fenced by its lease, also the last and a stopped
worker's."""

import logging

import pytest
from django.db import connection

from nexus_queues import Status, enqueue_many, update_status
from nexus_queues.models import JobRun
from nexus_queues.throughput import QueueMinute
from nexus_queues.worker.loop import Worker
from tests.commands import reports
from tests.damage import UNREADABLE_PAST, unreadable, write_raw
from tests.testapp.jobs import GreetingJob
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db(transaction=True)


class OneByOne(GreetingJob, abstract=True):
    """Greetings one per run, as the tasks framework's jobs run."""

    batch_size = 1


class ErrorsItsOwnRow(OneByOne, abstract=True):
    """An operator sets the row of greeting 1 to Error while its job runs: its lease is lost."""

    def process(self, message: Greeting) -> None:
        if message.times == 1:
            update_status(Greeting, Status.ERROR, status=Status.LEASED)
        super().process(message)


class ThreeAtATimeErrorsFour(GreetingJob, abstract=True):
    """Greetings three per run; an operator sets the row of greeting 4 to Error while its run goes on."""

    batch_size = 3

    def process(self, message: Greeting) -> None:
        if message.times == 4:
            update_status(Greeting, Status.ERROR, message__times=4)
        super().process(message)


class StopsAtTwo(OneByOne, abstract=True):
    """Stops its worker (as SIGTERM does) while greeting 2 runs."""

    worker: Worker

    def process(self, message: Greeting) -> None:
        if message.times == 2:
            type(self).worker.stop()
        super().process(message)


def greetings(count: int) -> list[Greeting]:
    return [Greeting(name="hello", times=i) for i in range(count)]


def finished_runs() -> list[tuple[int, int]]:
    """(leased, processed) of each finished run of the greetings, in order."""
    runs = JobRun.objects.filter(queue="greetings", finished_at__isnull=False).order_by("pk")
    return list(runs.values_list("leased", "processed"))


def test_drain__every_run_acknowledged_once_and_counted(reported):
    """Six runs of one message: each processed once, each run finished with its count, the minute's count six."""
    enqueue_many(greetings(6))
    Worker(job_classes=[OneByOne], burst=True, listen=False).run()
    assert sorted(int(words[1]) for words in reports(reported)) == list(range(6))
    assert not Greeting.queue_model.objects.exists()
    assert finished_runs() == [(1, 1)] * 6
    assert sum(QueueMinute.objects.filter(queue="greetings").values_list("processed", flat=True)) == 6


@pytest.mark.engines("postgresql")
def test_drain__each_claim_carries_the_last_runs_acknowledgement(reported):
    """On PostgreSQL six runs take seven statements to claim and acknowledge, not twelve: five carry both, the first
    only claims, the last acknowledgement (no claim follows it) is written alone."""
    enqueue_many(greetings(6))
    executed: list[str] = []

    def record(execute, sql, params, many, context):  # the worker resets Django's query log every sweep
        executed.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        Worker(job_classes=[OneByOne], burst=True, listen=False).run()
    statements = [sql for sql in executed if "claimed AS" in sql or "done AS" in sql]
    both = [sql for sql in statements if "claimed AS" in sql and "done AS" in sql]
    assert (len(statements), len(both)) == (7, 5)
    assert finished_runs() == [(1, 1)] * 6


@pytest.mark.parametrize(
    ("job", "count", "lost_at", "runs"),
    [(ErrorsItsOwnRow, 3, 1, [(1, 1), (1, 0), (1, 1)]), (ThreeAtATimeErrorsFour, 9, 4, [(3, 3), (3, 2), (3, 3)])],
    ids=["runs of one", "runs of three"],
)
def test_drain__a_lease_lost_before_the_next_claim_is_left_and_told(reported, caplog, job, count, lost_at, runs):
    """A row an operator changed while its job ran is not completed by the acknowledgement the next claim carries:
    it stays Error, the lost lease is logged, its run counts it unprocessed; the others are processed. In runs of
    several, the claim reports which of its rows it finished (PostgreSQL returns them once, with the first claimed
    row), so the lease lost in the middle of a run is the one told and left."""
    enqueue_many(greetings(count))
    lost = Greeting.queue_model.objects.values_list("pk", flat=True)[lost_at]
    with caplog.at_level(logging.WARNING, logger="nexus_queues"):
        Worker(job_classes=[job], burst=True, listen=False).run()
    assert list(Greeting.queue_model.objects.values_list("pk", "status")) == [(lost, Status.ERROR)]
    assert f"Lease lost on 1 message(s) [{lost}]" in caplog.text
    assert finished_runs() == runs


def test_drain__a_stopped_worker_acknowledges_its_last_run(reported):
    """Stopped mid-drain, the worker writes the acknowledgement it held for the next claim: nothing is left
    Leased, the rest waits Pending."""
    enqueue_many(greetings(5))
    worker = Worker(job_classes=[StopsAtTwo], burst=True, listen=False)
    StopsAtTwo.worker = worker
    worker.run()
    assert sorted(int(words[1]) for words in reports(reported)) == [0, 1, 2]
    assert list(Greeting.queue_model.objects.values_list("status", flat=True)) == [Status.PENDING] * 2
    assert finished_runs() == [(1, 1)] * 3


def test_drain__a_claimed_row_python_cannot_read_costs_only_itself(reported):
    """A row the claim that carries an acknowledgement cannot read becomes Error; that acknowledgement holds, and
    the other rows are processed."""
    enqueue_many(greetings(3))
    bad = Greeting.queue_model.objects.values_list("pk", flat=True)[1]
    write_raw(Greeting.queue_model, bad, "process_at", unreadable(UNREADABLE_PAST))
    Worker(job_classes=[OneByOne], burst=True, listen=False).run()
    assert list(Greeting.queue_model.objects.values_list("pk", "status")) == [(bad, Status.ERROR)]
    assert sorted(int(words[1]) for words in reports(reported)) == [0, 2]
    assert sum(JobRun.objects.filter(queue="greetings").values_list("processed", flat=True)) == 2
