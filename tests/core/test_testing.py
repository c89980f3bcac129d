"""The shipped test helpers: drain() runs a queue's job through the real lease and acknowledgement until nothing is
Pending; capture_enqueued() sees what a block enqueued, in a test's transaction or outside one."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.test import TestCase

from nexus_queues import QueueJob, Status, enqueue, enqueue_many
from nexus_queues.exceptions import DrainDidNotEnd, InvalidArgument, NotRegistered
from nexus_queues.models import JobRun
from nexus_queues.testing import Drained, capture_enqueued, drain
from tests.testapp.jobs import GreetingJob
from tests.testapp.queues import Audit, Greeting, Inventory, Product


class Retrying(QueueJob, abstract=True):
    """Fails greetings named 'boom', retried twice; greets the others."""

    message_class = Greeting
    max_attempts = 3
    backoff = timedelta(minutes=5)

    def process(self, message: Greeting) -> None:
        if message.name == "boom":
            raise RuntimeError("boom")


class Echo(QueueJob, abstract=True):
    """Enqueues another greeting for each one it processes: its queue never empties."""

    message_class = Greeting

    def process(self, message: Greeting) -> None:
        enqueue(Greeting(name=message.name, times=message.times + 1))


@pytest.mark.django_db
def test_drain__runs_the_queues_job_until_nothing_is_pending():
    """25 greetings at 10 a run take three runs; each run is recorded, and the queue is empty after."""
    enqueue_many([Greeting(name=f"g{i}") for i in range(25)])
    result = drain(Greeting)
    assert result == Drained(runs=3, leased=25, processed=25)
    assert not Greeting.queue_items().exists()
    assert sorted(JobRun.objects.filter(queue="greetings").values_list("processed", flat=True)) == [5, 10, 10]


@pytest.mark.django_db
def test_drain__failed_messages_are_set_to_error_and_returned():
    """A message the job raises for is Error with the exception kept; drain returns it beside the counts."""
    enqueue_many([Greeting(name="Ada"), Greeting(name="fail", times=7), Greeting(name="Grace")])
    result = drain("greetings")
    assert (result.processed, result.errors) == (2, 1)
    [failed] = result.failed
    assert (failed.status, failed.error_type) == (Status.ERROR, "builtins.ValueError")
    assert failed.error_message == "cannot greet 7"
    assert "raise ValueError" in failed.error_traceback
    assert Greeting.queue_items().get().pk == failed.pk


@pytest.mark.django_db
def test_drain__a_retried_message_sleeps_until_its_retry():
    """A failure with attempts left is rescheduled, not Error: the drain ends with it Sleeping."""
    enqueue_many([Greeting(name="boom"), Greeting(name="Ada")])
    result = drain(Retrying)
    assert (result.processed, result.rescheduled, result.errors, result.failed) == (1, 1, 0, ())
    row = Greeting.queue_items().get()
    assert (row.status, row.attempts, row.error_message) == (Status.SLEEPING, 1, "boom")


@pytest.mark.django_db
def test_drain__sleeping_messages_stay_asleep():
    """A delayed message is not due, so the drain leaves it; an empty drain counts nothing."""
    enqueue(Greeting(name="later"), delay=timedelta(minutes=5))
    assert drain(GreetingJob) == Drained()
    assert Greeting.queue_items().get().status == Status.SLEEPING


@pytest.mark.django_db
def test_drain__a_job_that_refills_its_queue_is_stopped():
    """A queue still Pending after max_runs runs raises DrainDidNotEnd naming it; the runs made stand."""
    enqueue(Greeting(name="echo"))
    with pytest.raises(DrainDidNotEnd, match="Queue 'greetings' still has Pending messages after 3 runs"):
        drain(Echo, max_runs=3)
    assert Greeting.queue_items().get().message.times == 4


@pytest.mark.django_db
def test_drain__max_runs_is_enough_when_the_queue_empties_on_the_last():
    """Exactly max_runs runs that leave nothing Pending end normally."""
    enqueue_many([Greeting(name=f"g{i}") for i in range(20)])
    assert drain(Greeting, max_runs=2).processed == 20


@pytest.mark.parametrize("max_runs", [0, -1, 1.5, True, "3"])
def test_drain__max_runs_must_be_a_positive_integer(max_runs):
    """A bad max_runs is refused before anything is leased."""
    with pytest.raises(InvalidArgument, match="max_runs must be a positive integer"):
        drain(Greeting, max_runs=max_runs)


@pytest.mark.django_db
def test_drain__a_queue_without_a_job_is_named():
    """A queue no job processes, or no queue at all, raises NotRegistered, saying which."""
    with pytest.raises(NotRegistered, match="No job processes queue 'audits'"):
        drain(Audit)
    with pytest.raises(NotRegistered, match="nowhere"):
        drain("nowhere")


@pytest.mark.django_db
def test_capture_enqueued__sees_the_blocks_messages_of_its_queue_only():
    """Inside the test's transaction, what the block stored into the queue is captured, in order; other queues
    and messages enqueued before or after are not."""
    enqueue(Greeting(name="before"))
    with capture_enqueued(Greeting) as captured:
        enqueue(Greeting(name="Ada"))
        enqueue_many([Greeting(name="Grace"), Greeting(name="Alan")])
        enqueue(Inventory(sku="x", quantity=1))
    enqueue(Greeting(name="after"))
    assert [m.name for m in captured.messages] == ["Ada", "Grace", "Alan"]
    assert len(captured.results) == 2


@pytest.mark.django_db
def test_capture_enqueued__idempotent_duplicates_are_discarded_not_stored():
    """An unchanged product sent again is among the discarded, not the stored."""
    enqueue(Product(sku="p1", name="Lamp"))
    with capture_enqueued(Product) as captured:
        enqueue(Product(sku="p1", name="Lamp"))
        enqueue(Product(sku="p2", name="Desk"))
    assert [p.sku for p in captured.messages] == ["p2"]
    assert [p.sku for p in captured.discarded] == ["p1"]


@pytest.mark.django_db
def test_capture_enqueued__a_rolled_back_enqueue_is_not_captured():
    """A message whose savepoint rolls back was never stored, and is not captured."""
    with capture_enqueued(Greeting) as captured:
        with pytest.raises(RuntimeError), transaction.atomic():
            enqueue(Greeting(name="undone"))
            raise RuntimeError("roll back")
        enqueue(Greeting(name="kept"))
    assert [m.name for m in captured.messages] == ["kept"]
    assert [row.message.name for row in Greeting.queue_items()] == ["kept"]


@pytest.mark.django_db(transaction=True)
def test_capture_enqueued__outside_a_transaction_each_commit_is_captured():
    """In autocommit, and in the code's own committed atomic block, each enqueue is captured as it commits."""
    with capture_enqueued(Greeting) as captured:
        enqueue(Greeting(name="Ada"))
        assert [m.name for m in captured.messages] == ["Ada"]
        with transaction.atomic():
            enqueue(Greeting(name="Grace"))
    assert [m.name for m in captured.messages] == ["Ada", "Grace"]


@pytest.mark.django_db
def test_capture_enqueued__then_drain_runs_what_was_captured():
    """The two helpers together: what was captured is what the drain processes."""
    with capture_enqueued(Greeting) as captured:
        enqueue_many([Greeting(name="Ada"), Greeting(name="fail")])
    result = drain(Greeting)
    assert len(captured.messages) == result.leased == 2
    assert [row.message.name for row in result.failed] == ["fail"]


class CaptureInTestCase(TestCase):
    """The helpers in a Django TestCase, whose test runs in a transaction that never commits."""

    def test_capture_and_drain(self) -> None:
        """A TestCase captures the block's messages and drains the queue as a pytest test does."""
        with capture_enqueued(Greeting) as captured:
            enqueue(Greeting(name="Ada", times=2))
        self.assertEqual(captured.messages, [Greeting(name="Ada", times=2)])
        self.assertEqual(drain(Greeting).processed, 1)
