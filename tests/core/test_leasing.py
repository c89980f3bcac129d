"""Lease: FIFO claims, what is invisible to leasing, and abandoning expired leases."""

from datetime import timedelta

import pytest
from django.db import IntegrityError
from django.utils import timezone

from nexus_queues import Status, abandon_expired_leases, enqueue, enqueue_many, lease, mark_processed, set_status
from nexus_queues.exceptions import InvalidArgument, NotRegistered
from nexus_queues.models import JobRun
from tests.damage import UNREADABLE_FUTURE, UNREADABLE_PAST, unreadable, write_raw
from tests.factories import GreetingFactory
from tests.testapp.queues import Greeting, Inventory

pytestmark = pytest.mark.django_db


def test_lease__claims_pending_in_fifo_order():
    """The oldest Pending messages come first, up to count, marked Leased with a lease time."""
    messages = GreetingFactory.build_batch(5)
    enqueue_many(messages)
    now = timezone.now()
    items = lease(Greeting, 3, lease_time=timedelta(minutes=2), now=now)
    assert [item.message for item in items] == messages[:3]
    for item in items:
        assert item.status == Status.LEASED and item.attempts == 1
        assert item.lease_expires_at == now + timedelta(minutes=2)
    stored = Greeting.queue_model.objects.in_bulk([i.pk for i in items])
    assert {row.status for row in stored.values()} == {Status.LEASED}
    assert {row.lease_expires_at for row in stored.values()} == {now + timedelta(minutes=2)}
    assert [item.message for item in lease(Greeting, 10)] == messages[3:]
    assert lease(Greeting, 10) == []


def test_lease__one_correlation_id_per_call():
    """Each lease call stamps its rows with one correlation id, a new one unless given."""
    enqueue_many(GreetingFactory.build_batch(4))
    first = lease(Greeting, 2)
    second = lease(Greeting, 2, correlation_id="run-42")
    assert len({i.correlation_id for i in first}) == 1
    assert first[0].correlation_id != "run-42"
    assert {i.correlation_id for i in second} == {"run-42"}
    assert set(
        Greeting.queue_model.objects.filter(pk__in=[i.pk for i in second]).values_list("correlation_id", flat=True)
    ) == {"run-42"}


def test_lease__items_are_the_stored_rows():
    """A leased item holds every column as the ORM would load it, the previous version included."""
    enqueue(Inventory(sku="A", quantity=1))
    mark_processed(lease(Inventory, 1))
    enqueue(Inventory(sku="A", quantity=2), expires_at=timezone.now() + timedelta(hours=1))
    [item] = lease(Inventory, 1)
    stored = Inventory.queue_model.objects.get(pk=item.pk)
    for field in Inventory.queue_model._meta.concrete_fields:
        assert getattr(item, field.attname) == getattr(stored, field.attname), field.name
    assert item.message.quantity == 2 and item.previous_message.quantity == 1
    assert item._state.db == "default" and not item._state.adding


def test_lease__records_the_run_only_when_it_leases():
    """A job run given to lease is saved with its leased count; an empty lease saves none."""
    now = timezone.now()
    empty = JobRun(job="Greet", queue="greetings", correlation_id="run-0", worker="here:1", started_at=now)
    assert lease(Greeting, 5, correlation_id="run-0", run=empty) == []
    assert empty.pk is None and not JobRun.objects.exists()
    enqueue_many(GreetingFactory.build_batch(3))
    run = JobRun(job="Greet", queue="greetings", correlation_id="run-1", worker="here:1", started_at=now)
    items = lease(Greeting, 5, correlation_id="run-1", run=run)
    stored = JobRun.objects.get()
    assert (stored.pk, stored.leased, stored.correlation_id, stored.started_at) == (run.pk, 3, "run-1", now)
    assert stored.finished_at is None and stored.processed == 0
    assert run.leased == 3 and len(items) == 3


@pytest.mark.django_db(transaction=True)
def test_lease__run_that_cannot_be_recorded_leases_nothing():
    """The claim and its run are one transaction: when the run fails to save, the messages stay Pending."""
    now = timezone.now()
    JobRun.objects.create(job="Greet", queue="greetings", correlation_id="taken", worker="here:1", started_at=now)
    enqueue_many(GreetingFactory.build_batch(2))
    clash = JobRun(job="Greet", queue="greetings", correlation_id="taken", worker="here:2", started_at=now)
    with pytest.raises(IntegrityError):
        lease(Greeting, 5, correlation_id="taken", run=clash)
    assert set(Greeting.queue_model.objects.values_list("status", flat=True)) == {Status.PENDING}
    assert JobRun.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("column", "times"),
    [("process_at", UNREADABLE_PAST), ("expires_at", UNREADABLE_FUTURE), ("created_at", UNREADABLE_FUTURE)],
    ids=["process_at-past", "expires_at-future", "created_at-future"],
)
@pytest.mark.parametrize("with_run", [True, False], ids=["run", "no-run"])
def test_lease__a_row_python_cannot_read_becomes_error_the_rest_are_leased(column, times, with_run):
    """A row holding a timestamp Python cannot read becomes Error, naming the column and what it held, and
    readable again; the rest are leased, and no row is left Leased unread."""
    value = unreadable(times)
    enqueue_many(GreetingFactory.build_batch(3))
    first, bad, last = Greeting.queue_model.objects.values_list("pk", flat=True)
    write_raw(Greeting.queue_model, bad, column, value)
    now = timezone.now()
    run = JobRun(job="Greet", queue="greetings", correlation_id="run-1", worker="here:1", started_at=now)
    items = lease(Greeting, 10, correlation_id="run-1", run=run if with_run else None)
    assert [item.pk for item in items] == [first, last]
    assert list(Greeting.queue_model.objects.leased().values_list("pk", flat=True)) == [first, last]
    row = Greeting.queue_model.objects.get(pk=bad)
    assert (row.status, row.error_type) == (Status.ERROR, "nexus_queues.exceptions.UnreadableRow")
    assert f"{column} held '" in row.error_message and value.removesuffix(" BC")[:10] in row.error_message
    assert getattr(row, column) == (row.updated_at if column == "created_at" else None)
    if with_run:
        stored = JobRun.objects.get()
        assert stored.leased - stored.errors == run.leased - run.errors == 2


def test_lease__by_queue_name():
    enqueue(GreetingFactory())
    assert len(lease("greetings", 1)) == 1


def test_lease__skips_sleeping_custom_and_expired():
    """Sleeping, custom-status and expired messages are invisible to leasing."""
    now = timezone.now()
    enqueue(GreetingFactory(), delay=timedelta(hours=1))
    enqueue(GreetingFactory(), status="Paused")
    enqueue(GreetingFactory(), expires_at=now - timedelta(seconds=1))
    visible = GreetingFactory()
    enqueue(visible, expires_at=now + timedelta(hours=1))
    assert [item.message for item in lease(Greeting, 10, now=now)] == [visible]


def test_lease__attempts_count_every_lease():
    enqueue(GreetingFactory())
    [item] = lease(Greeting, 1)
    set_status([item], Status.PENDING)
    [again] = lease(Greeting, 1)
    assert again.pk == item.pk and again.attempts == 2


@pytest.mark.parametrize(
    ("count", "lease_time", "match"),
    [
        (0, timedelta(1), "count"),
        (-1, timedelta(1), "count"),
        (True, timedelta(1), "count"),
        (1, timedelta(0), "lease_time"),
        (1, 30, "lease_time"),
    ],
)
def test_lease__bad_arguments(count, lease_time, match):
    enqueue(GreetingFactory())
    with pytest.raises(InvalidArgument, match=match):
        lease(Greeting, count, lease_time=lease_time)
    assert Greeting.queue_model.objects.get().status == Status.PENDING


def test_lease__unknown_queue():
    with pytest.raises(NotRegistered, match="No queue named 'nope'. Known queues: .*greetings"):
        lease("nope", 1)


def test_abandon_expired_leases__only_expired_become_abandoned():
    """Expired leases become Abandoned, keeping their correlation id; live leases stay."""
    enqueue_many(GreetingFactory.build_batch(2))
    now = timezone.now()
    [short] = lease(Greeting, 1, lease_time=timedelta(seconds=1), now=now)
    [long] = lease(Greeting, 1, lease_time=timedelta(hours=1), now=now)
    counts = abandon_expired_leases(now + timedelta(seconds=2))
    assert counts["greetings"] == 1
    short_row, long_row = Greeting.queue_model.objects.get(pk=short.pk), Greeting.queue_model.objects.get(pk=long.pk)
    assert short_row.status == Status.ABANDONED and short_row.correlation_id == short.correlation_id
    assert long_row.status == Status.LEASED


def test_abandoned__is_never_leased_again_silently():
    """An Abandoned message waits for an operator: leasing does not pick it up."""
    enqueue(GreetingFactory())
    now = timezone.now()
    lease(Greeting, 1, lease_time=timedelta(seconds=1), now=now)
    abandon_expired_leases(now + timedelta(seconds=5))
    assert lease(Greeting, 1, now=now + timedelta(seconds=6)) == []
