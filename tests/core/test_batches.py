"""Batches: members counted as they finish, the completion enqueued once, clear errors for what cannot be one."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import Status, batch, cancel, enqueue, enqueue_many, lease, mark_error, mark_processed, update_status
from nexus_queues.exceptions import InvalidArgument
from nexus_queues.models import Batch
from nexus_queues.testing import drain
from nexus_queues.worker.housekeeping import drop_expired
from tests.testapp.queues import Audit, BatchReport, Greeting, Inventory, Product

pytestmark = pytest.mark.django_db


def greetings(*names: str) -> list[Greeting]:
    return [Greeting(name=name, times=i) for i, name in enumerate(names)]


def counts(batch_id: int) -> tuple[int, int, int, int, bool]:
    b = Batch.objects.get(pk=batch_id)
    return b.total, b.processed, b.error, b.cancelled, b.completed_at is not None


def reports() -> list[dict]:
    return [item.message.batch.model_dump() for item in BatchReport.queue_items().order_by("pk")]


def test_enqueue_many__batch_counts_members_and_enqueues_the_completion_once():
    """The batch's counters follow its members; the last one to finish enqueues the completion with the counts."""
    result = enqueue_many(greetings("a", "fail", "b"), batch="greet", on_complete=BatchReport(note="done"))
    assert counts(result.batch) == (3, 0, 0, 0, False)
    assert all(item.headers == {"nexus_batch": result.batch} for item in Greeting.queue_items())
    drain(Greeting)
    assert counts(result.batch) == (3, 2, 1, 0, True)
    [report] = BatchReport.queue_items()
    assert report.message.note == "done"
    assert report.message.batch.model_dump() | {"created_at": None, "completed_at": None} == {
        "id": result.batch, "queue": "greetings", "label": "greet", "total": 3, "pending": 0, "processed": 2,
        "error": 1, "cancelled": 0, "created_at": None, "completed_at": None,
    }


def test_batch__spans_several_enqueues_and_completes_only_once_closed():
    """Members that finish while the block still enqueues do not complete the batch: it completes once closed."""
    with batch(Greeting, label="two calls", on_complete=BatchReport()) as b:
        enqueue_many(greetings("a"), status=Status.PROCESSED)
        assert counts(b.pk) == (1, 1, 0, 0, False)
        enqueue(Greeting(name="b"), status=Status.ERROR)
    assert counts(b.pk) == (2, 1, 1, 0, True)
    assert len(reports()) == 1


def test_batch__empty_completes_at_once():
    """A batch that took no message is complete when its block ends."""
    with batch(Greeting, on_complete=BatchReport()) as b:
        pass
    assert counts(b.pk) == (0, 0, 0, 0, True)
    assert reports()[0]["total"] == 0


def test_batch__an_exception_rolls_back_the_batch_and_its_messages():
    """All or nothing, as enqueue_many."""
    with pytest.raises(RuntimeError), batch(Greeting):
        enqueue_many(greetings("a", "b"))
        raise RuntimeError("stop")
    assert not Batch.objects.exists()
    assert not Greeting.queue_items().exists()


def test_update_status__retrying_an_error_member_moves_the_counts_and_never_completes_twice():
    """Error back to Pending takes one from error; its next finish adds it again; the completion is not repeated."""
    result = enqueue_many(greetings("a", "fail"), batch="retry", on_complete=BatchReport())
    drain(Greeting)
    assert counts(result.batch) == (2, 1, 1, 0, True)
    assert update_status(Greeting, Status.PENDING, status=Status.ERROR) == 1
    assert counts(result.batch) == (2, 1, 0, 0, True)
    update_status(Greeting, Status.CANCELLED, status=Status.PENDING)
    assert counts(result.batch) == (2, 1, 0, 1, True)
    assert len(reports()) == 1


def test_update_status__an_operator_finishing_the_last_member_completes_the_batch():
    """Cancelled counts as finished: cancelling what is left completes the batch."""
    result = enqueue_many(greetings("a", "b"), batch="cancel", on_complete=BatchReport())
    update_status(Greeting, Status.CANCELLED)
    assert counts(result.batch) == (2, 0, 0, 2, True)
    assert reports()[0]["cancelled"] == 2


def test_cancel__pending_and_leased_members_count_cancelled_and_complete_the_batch():
    """cancel() moves the counters in its own transaction: a Leased and a Pending member cancelled finish the batch."""
    result = enqueue_many(greetings("a", "b", "c"), batch="stopped", on_complete=BatchReport())
    first, _ = lease(Greeting, 2)
    mark_processed([first])
    assert counts(result.batch) == (3, 1, 0, 0, False)
    cancel(Greeting.queue_items())
    assert counts(result.batch) == (3, 1, 0, 2, True)
    assert [(r["processed"], r["cancelled"]) for r in reports()] == [(1, 2)]


def test_mark_processed__fenced_completions_outside_a_worker_count_too():
    """mark_processed and mark_error on leased members count them in their own transaction."""
    result = enqueue_many(greetings("a", "b"), batch="by hand")
    first, second = lease(Greeting, 2)
    mark_processed([first])
    mark_error([second], ValueError("no"))
    mark_processed([second])  # its lease is gone: changes nothing, counts nothing
    assert counts(result.batch) == (2, 1, 1, 0, True)


def test_enqueue__replacing_a_member_by_its_id_moves_it_to_the_new_batch():
    """A queue with identity: the new version's batch counts it, the old one's no longer does."""
    old = enqueue_many([Inventory(sku="A", quantity=1), Inventory(sku="B", quantity=1)], batch="old")
    new = enqueue_many([Inventory(sku="A", quantity=2)], batch="new")
    assert counts(old.batch) == (1, 0, 0, 0, False)
    assert counts(new.batch) == (1, 0, 0, 0, False)
    with batch(Inventory) as again:
        enqueue(Inventory(sku="A", quantity=3))
        enqueue(Inventory(sku="A", quantity=4))
    assert counts(again.pk)[0] == 1
    assert counts(new.batch) == (0, 0, 0, 0, True)


def test_enqueue_many__idempotent_duplicates_are_not_members():
    """Only the messages stored join the batch."""
    enqueue(Product(sku="A", name="one"))
    result = enqueue_many([Product(sku="A", name="one"), Product(sku="B", name="two")], batch="sync")
    assert counts(result.batch)[0] == 1


def test_batch__refuses_what_cannot_be_one():
    """Nested batches, another queue's message, a completion without a batch field, a reserved header."""
    with pytest.raises(InvalidArgument, match="do not nest"), batch(Greeting), batch(Greeting):
        pass
    with pytest.raises(InvalidArgument, match="queue 'greetings'"), batch(Greeting):
        enqueue(Audit(event="x"))
    with pytest.raises(InvalidArgument, match="field `batch: BatchResult"):
        enqueue_many(greetings("a"), batch="x", on_complete=Audit(event="done"))
    with pytest.raises(InvalidArgument, match="reserved"):
        enqueue(Greeting(name="a"), headers={"nexus_batch": 1})
    with pytest.raises(InvalidArgument, match="give enqueue_many"):
        enqueue_many(greetings("a"), on_complete=BatchReport())
    assert not Greeting.queue_items().exists()


def test_mark_processed__members_cost_two_queries_per_batch():
    """The acknowledgement of batch members adds the batch's row lock and its update, once per batch."""
    enqueue_many(greetings(*"abcdefghij"), batch="cost")
    items = lease(Greeting, 10)
    with CaptureQueriesContext(connection) as queries:
        mark_processed(items)
    batch_queries = [q for q in queries.captured_queries if "nexus_batch" in q["sql"]]
    assert len(batch_queries) == 2


def test_drop_expired__counts_expired_members_cancelled():
    """A member that expires before it runs is deleted by housekeeping and counts Cancelled: its batch completes."""
    soon = timezone.now() + timedelta(minutes=1)
    result = enqueue_many(greetings("a", "b"), batch="expiring", expires_at=soon, on_complete=BatchReport())
    assert drop_expired(soon + timedelta(seconds=1))["greetings"] == 2
    assert counts(result.batch) == (2, 0, 0, 2, True)
    assert reports()[0]["cancelled"] == 2
