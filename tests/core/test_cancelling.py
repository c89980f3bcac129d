"""cancel(): Pending, Sleeping and Leased messages become Cancelled, the others stay; a cancelled lease can no longer
be completed; a job sees it at its next check. Real worker processes: tests/worker/test_stopping.py."""

import logging
from collections.abc import Mapping, Sequence

import pytest

from nexus_queues import QueueJob, Status, cancel, enqueue_many, lease, mark_processed
from nexus_queues.exceptions import InvalidArgument
from nexus_queues.jobs import Outcome
from nexus_queues.models import QueueItem
from nexus_queues.testing import drain
from tests.factories import (
    AbandonedFactory,
    ErrorFactory,
    GreetingFactory,
    LeasedFactory,
    PendingFactory,
    ProcessedFactory,
    SleepingFactory,
)
from tests.testapp.queues import Greeting, Inventory

pytestmark = pytest.mark.django_db(transaction=True)


def test_cancel__changes_pending_sleeping_and_leased_only():
    """Of a queryset, the Pending, Sleeping and Leased rows become Cancelled, their ids returned; the others stay."""
    stay = [ProcessedFactory(), ErrorFactory(), AbandonedFactory()]
    go = [PendingFactory(), SleepingFactory(), LeasedFactory()]
    cancelled = cancel(Greeting.queue_items().all())
    assert cancelled == sorted(item.pk for item in go)
    rows = dict(Greeting.queue_items().values_list("pk", "status"))
    assert {rows[item.pk] for item in go} == {Status.CANCELLED}
    assert [rows[item.pk] for item in stay] == [Status.PROCESSED, Status.ERROR, Status.ABANDONED]


def test_cancel__keeps_the_correlation_id_and_drops_the_lease():
    """A cancelled Leased row keeps the correlation id of the run that held it; its lease is gone."""
    held = LeasedFactory()
    cancel([held])
    row = Greeting.queue_items().get()
    assert (row.status, row.correlation_id, row.lease_expires_at) == (Status.CANCELLED, held.correlation_id, None)
    assert held.status == Status.CANCELLED, "the items given are changed in memory too"


def test_cancel__a_cancelled_lease_is_never_completed():
    """Once cancel() returned, the run holding the message cannot mark it Processed."""
    enqueue_many(GreetingFactory.build_batch(2))
    items = lease(Greeting, 2)
    assert cancel(Greeting.queue_items().filter(pk=items[0].pk)) == [items[0].pk]
    assert mark_processed(items) == [items[1].pk]
    assert list(Greeting.queue_items().values_list("status", flat=True)) == [Status.CANCELLED]


def test_cancel__twice_cancels_nothing_more():
    """Cancelling what is already Cancelled changes nothing and returns no id."""
    PendingFactory()
    assert len(cancel(Greeting.queue_items().all())) == 1
    assert cancel(Greeting.queue_items().all()) == []


@pytest.mark.parametrize("bad", ["greetings", 5, [object()]])
def test_cancel__refuses_what_is_not_a_queues_rows(bad):
    """A queue name, a number or objects that are not a queue's rows get a clear error, and nothing changes."""
    PendingFactory()
    with pytest.raises(InvalidArgument, match="cancel\\(\\) takes a queue's"):
        cancel(bad)
    assert Greeting.queue_items().get().status == Status.PENDING


class CancelsItself(QueueJob, abstract=True):
    """Cancels the message it holds (as an operator would meanwhile), then checks, as a job should."""

    message_class = Greeting
    seen: list[bool] = []

    def process(self, message: Greeting) -> None:
        if message.name == "cancel-me":
            CancelsItself.seen.append(self.cancelled)
            cancel(Greeting.queue_items().filter(message__name="cancel-me"))
            CancelsItself.seen.append(self.cancelled)
            self.check_cancelled()


def test_job__learns_of_the_cancel_at_its_next_check(caplog):
    """self.cancelled turns True once the message is cancelled; check_cancelled() stops the job, the worker logs
    the message as cancelled (not as failed) and leaves it Cancelled; the other messages are processed."""
    caplog.set_level(logging.INFO, logger="nexus_queues")
    CancelsItself.seen = []
    enqueue_many([Greeting(name="a"), Greeting(name="cancel-me"), Greeting(name="b")])
    drained = drain(CancelsItself)
    assert (drained.processed, drained.errors) == (2, 0)
    assert CancelsItself.seen == [False, True]
    assert list(Greeting.queue_items().values_list("status", flat=True)) == [Status.CANCELLED]
    assert "was cancelled; its job stopped" in caplog.text
    assert "failed" not in caplog.text


class BatchStopsOnCancel(QueueJob, abstract=True):
    """The batch form: cancels the sku ``x`` row, then stops the whole batch on the check."""

    message_class = Inventory

    def process_batch(self, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
        cancel([item for item in items if item.message.sku == "x"])
        self.check_cancelled()
        return {}


def test_job__a_batch_stopped_for_one_cancel_fails_the_others():
    """A batch job that stops on a cancel: the cancelled row stays Cancelled, the others of the batch fail with
    MessageCancelled (so that none is left Leased)."""
    enqueue_many([Inventory(sku="x", quantity=1), Inventory(sku="y", quantity=1)])
    drain(BatchStopsOnCancel)
    rows = dict(Inventory.queue_items().values_list("message_id", "status"))
    assert rows == {"x": Status.CANCELLED, "y": Status.ERROR}
    assert Inventory.queue_items().get(message_id="y").error_type.endswith("MessageCancelled")
