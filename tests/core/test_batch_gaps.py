"""Members that leave by other ways than a run: deleted by an operator (Cancelled), quarantined (Error)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from nexus_queues import Status, enqueue_many, lease, mark_processed
from nexus_queues.models import Batch
from tests.damage import UNREADABLE_PAST, unreadable, write_raw
from tests.testapp.queues import BatchReport, Greeting

GREETINGS = "/admin/testapp/greetingqueueitem/"


def counts(batch_id: int) -> tuple[int, int, int, int, bool]:
    b = Batch.objects.get(pk=batch_id)
    return b.total, b.processed, b.error, b.cancelled, b.completed_at is not None


def members(count: int, note: str = "done") -> tuple[int, list[int]]:
    result = enqueue_many([Greeting(name=f"g{i}") for i in range(count)], batch="b", on_complete=BatchReport(note=note))
    return result.batch, list(Greeting.queue_items().order_by("pk").values_list("pk", flat=True))


@pytest.mark.django_db
def test_queryset_delete__members_not_finished_count_cancelled_and_the_batch_completes():
    """Deleting the members still waiting counts them Cancelled; a deleted Processed one stays Processed."""
    batch, (first, *rest) = members(3)
    mark_processed(lease(Greeting, 1))
    Greeting.queue_items().filter(pk=first).delete()  # Processed already: counted so
    assert counts(batch) == (3, 1, 0, 0, False)

    deleted, _ = Greeting.queue_items().filter(pk__in=rest).delete()

    assert deleted == 2
    assert counts(batch) == (3, 1, 0, 2, True)
    assert BatchReport.queue_items().get().message.batch.cancelled == 2


@pytest.mark.django_db
def test_model_delete__a_waiting_member_counts_cancelled():
    """A row deleted one by one (the admin's change page) counts too."""
    batch, [only] = members(1)

    Greeting.queue_model.objects.get(pk=only).delete()

    assert counts(batch) == (1, 0, 0, 1, True)


@pytest.mark.django_db
def test_admin_delete_action__members_count_cancelled(admin_client: Client):
    """The admin's Delete… action goes through the same delete: the batch completes, its report once."""
    batch, ids = members(2)

    data = {"action": "delete_messages", "_selected_action": [str(i) for i in ids], "apply": "1"}
    admin_client.post(GREETINGS, data)

    assert not Greeting.queue_items().exists()
    assert counts(batch) == (2, 0, 0, 2, True)
    assert BatchReport.queue_items().count() == 1


@pytest.mark.django_db
def test_delete__rows_outside_batches_cost_one_statement_more(django_assert_num_queries):
    """With no batch of the queue, a delete is Django's own statement and the one that finds no member."""
    enqueue_many([Greeting(name="a")])

    with django_assert_num_queries(2):
        Greeting.queue_items().all().delete()


@pytest.mark.django_db
def test_update__of_a_status_costs_one_statement_more_and_two_per_batch_of_its_members(django_assert_num_queries):
    """A queryset's update of a status: Django's statement and the one that finds the members; with members of two
    batches, their update by id and each batch's row lock and update."""
    enqueue_many([Greeting(name="outside")])
    with django_assert_num_queries(2):
        assert Greeting.queue_items().update(status=Status.ERROR) == 1
    enqueue_many([Greeting(name="a"), Greeting(name="b")], batch="two")
    enqueue_many([Greeting(name=name) for name in "cde"], batch="three")

    with django_assert_num_queries(2 + 1 + 2 * 2):
        assert Greeting.queue_items().update(status=Status.PROCESSED) == 6
    with django_assert_num_queries(2):  # to a status not finished, from one not finished: nothing to count
        assert Greeting.queue_items().filter(status=Status.PENDING).update(status="Parked") == 0


@pytest.mark.django_db(transaction=True)
def test_quarantine__an_unreadable_member_counts_error_and_the_batch_completes():
    """A member a lease cannot read is set to Error by the quarantine, and counted Error in its batch."""
    value = unreadable(UNREADABLE_PAST)
    batch, (good, bad) = members(2)
    write_raw(Greeting.queue_model, bad, "process_at", value)

    items = lease(Greeting, 10)

    assert [item.pk for item in items] == [good]
    assert Greeting.queue_model.objects.get(pk=bad).status == Status.ERROR
    assert counts(batch) == (2, 0, 1, 0, False)
    mark_processed(items)
    assert counts(batch) == (2, 1, 1, 0, True)
    assert BatchReport.queue_items().get().message.batch.error == 1
    assert timezone.now() >= Batch.objects.get(pk=batch).completed_at


@pytest.mark.django_db
def test_update_unfinished__a_claim_dispatch_and_abandon_look_up_no_member(django_assert_num_queries):
    """Rows moved among statuses not finished (made due, leased, abandoned) count in no batch: the hot paths write
    them in one statement however many batch members they move, and the batch's counts stay as they were."""
    batch, ids = members(3)
    greetings = Greeting.queue_items()
    with django_assert_num_queries(1):
        assert greetings.filter(pk__in=ids).update_unfinished(status=Status.LEASED) == 3
    with django_assert_num_queries(1):
        assert greetings.lease_expired(timezone.now()).update_unfinished(status=Status.ABANDONED) == 0
    assert counts(batch) == (3, 0, 0, 0, False)
    with pytest.raises(ValueError, match="finished"):
        greetings.update_unfinished(status=Status.PROCESSED)
