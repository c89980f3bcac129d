"""Enqueue: statuses, scheduling, identity, idempotency, batching, and refusing bad input."""

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import Status, enqueue, enqueue_many, set_default_status
from nexus_queues.exceptions import InvalidMessage, InvalidStatus
from tests.factories import AuditFactory, GreetingFactory, InventoryFactory, ProductFactory
from tests.races import together
from tests.testapp.queues import Audit, Greeting, Inventory, Product

pytestmark = pytest.mark.django_db


def rows(message_class):
    return list(message_class.model.objects.order_by("id"))


def test_enqueue__stores_pending_row():
    """A message becomes one Pending row holding its JSON."""
    greeting = GreetingFactory(name="Ada")
    result = enqueue(greeting)
    [row] = rows(Greeting)
    assert result.stored == (greeting,) and not result.discarded
    assert row.status == Status.PENDING and row.message == greeting
    assert row.attempts == 0 and row.message_id is None and row.headers == {}
    assert row.created_at == row.updated_at


def test_enqueue__fifo_ids_grow():
    """Ids grow with every enqueue, giving FIFO order."""
    enqueue_many(GreetingFactory.build_batch(3))
    enqueue(GreetingFactory())
    ids = [row.id for row in rows(Greeting)]
    assert ids == sorted(ids) and len(set(ids)) == 4


def test_enqueue__at_makes_it_sleeping():
    """A message for later is Sleeping until its time."""
    at = timezone.now() + timedelta(hours=2)
    enqueue(GreetingFactory(), at=at)
    [row] = rows(Greeting)
    assert row.status == Status.SLEEPING and row.process_at == at


def test_enqueue__delay_is_relative_to_now():
    """delay=... schedules now + delay."""
    before = timezone.now()
    enqueue(GreetingFactory(), delay=timedelta(minutes=5))
    [row] = rows(Greeting)
    assert row.status == Status.SLEEPING
    assert before + timedelta(minutes=5) <= row.process_at <= timezone.now() + timedelta(minutes=5)


def test_enqueue__explicit_status():
    """status=... stores any settable status, custom ones too."""
    enqueue(GreetingFactory(), status="OnHold")
    assert rows(Greeting)[0].status == "OnHold"


def test_enqueue__headers_and_expiry_are_kept():
    expires = timezone.now() + timedelta(days=1)
    enqueue(GreetingFactory(), headers={"source": "shop", "trace": 7}, expires_at=expires)
    [row] = rows(Greeting)
    assert row.headers == {"source": "shop", "trace": 7} and row.expires_at == expires


def test_enqueue__class_default_status():
    """A queue's default_status option applies when nothing else is said."""
    enqueue(AuditFactory())
    enqueue_many([AuditFactory()])
    assert [row.status for row in rows(Audit)] == ["OnHold", "OnHold"]


def test_enqueue__runtime_default_status_applies_to_single_and_many():
    """set_default_status changes what new messages get, for enqueue and enqueue_many."""
    set_default_status(Greeting, "Paused")
    enqueue(GreetingFactory())
    enqueue_many(GreetingFactory.build_batch(2))
    enqueue(GreetingFactory(), status=Status.PENDING)
    assert [row.status for row in rows(Greeting)] == ["Paused", "Paused", "Paused", "Pending"]
    set_default_status(Greeting, Status.PENDING)
    enqueue(GreetingFactory())
    assert rows(Greeting)[-1].status == Status.PENDING


def test_enqueue__identity_replaces_and_resets():
    """A new version of a message with identity replaces the row and resets its status."""
    first = InventoryFactory(sku="A", quantity=1)
    enqueue(first, status="OnHold")
    Inventory.model.objects.update(attempts=3, error_type="x.Y", error_message="boom")
    second = InventoryFactory(sku="A", quantity=2)
    result = enqueue(second)
    [row] = rows(Inventory)
    assert result.stored == (second,)
    assert row.message == second and row.status == Status.PENDING
    assert (row.attempts, row.error_type, row.error_message) == (0, "", "")


def test_enqueue__non_idempotent_identity_stores_same_json_again():
    """Without idempotency, re-sending the same message resets it for processing."""
    message = InventoryFactory(sku="A")
    enqueue(message)
    Inventory.model.objects.update(status="Hold")
    assert enqueue(message).stored == (message,)
    assert rows(Inventory)[0].status == Status.PENDING


def test_enqueue__idempotent_discards_equal_message_whatever_key_order():
    """An idempotent queue drops a message whose id and canonical JSON are stored; key order does not matter."""
    enqueue(ProductFactory(sku="A", attributes={"color": "red", "size": "L"}))
    Product.model.objects.update(status=Status.PROCESSED)
    same = ProductFactory(sku="A", attributes={"size": "L", "color": "red"})
    same = same.model_copy(update={"name": rows(Product)[0].message.name})
    result = enqueue(same)
    assert result.discarded == (same,) and not result.stored
    assert rows(Product)[0].status == Status.PROCESSED


def test_enqueue__idempotent_stores_changed_message():
    enqueue(ProductFactory(sku="A", name="old"))
    changed = ProductFactory(sku="A", name="new")
    assert enqueue(changed).stored == (changed,)
    assert rows(Product)[0].message.name == "new"


def test_enqueue_many__reports_stored_discarded_superseded():
    """Every message given lands in exactly one of stored, discarded, superseded."""
    kept = ProductFactory(sku="KEEP")
    enqueue(kept)
    v1, v2 = ProductFactory(sku="B", name="v1"), ProductFactory(sku="B", name="v2")
    twin_a = ProductFactory(sku="C", name="same")
    twin_b = twin_a.model_copy()
    result = enqueue_many([kept, v1, twin_a, v2, twin_b])
    assert result.stored == (v2, twin_b)
    assert result.discarded == (kept, twin_a)
    assert result.superseded == (v1,)
    assert sorted(row.message.name for row in rows(Product)) == sorted([kept.name, "same", "v2"])


def test_enqueue_many__is_batched(django_assert_max_num_queries):
    """The number of statements does not grow with the number of messages."""
    with CaptureQueriesContext(connection) as small:
        enqueue_many(GreetingFactory.build_batch(10))
    with CaptureQueriesContext(connection) as large:
        enqueue_many(GreetingFactory.build_batch(3000))
    assert len(large.captured_queries) == len(small.captured_queries) <= 6
    assert Greeting.model.objects.count() == 3010


def test_enqueue_many__identity_batched():
    """Identity queues upsert in chunks, not one statement per message."""
    with CaptureQueriesContext(connection) as ctx:
        enqueue_many(ProductFactory.build_batch(1500))
    assert Product.model.objects.count() == 1500
    assert len(ctx.captured_queries) <= 8


def test_enqueue_many__empty_does_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert enqueue_many([]).stored == ()


def test_enqueue_many__scheduled():
    at = timezone.now() + timedelta(minutes=1)
    enqueue_many(GreetingFactory.build_batch(3), at=at)
    assert {(row.status, row.process_at) for row in rows(Greeting)} == {(Status.SLEEPING, at)}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"at": timezone.now(), "delay": timedelta(1)}, InvalidMessage, "not both"),
        ({"delay": timedelta(seconds=-1)}, InvalidMessage, "non-negative"),
        ({"delay": 5}, InvalidMessage, "timedelta"),
        ({"at": "tomorrow"}, InvalidMessage, "datetime"),
        ({"at": timezone.now().replace(tzinfo=None)}, InvalidMessage, "timezone-aware"),
        ({"at": timezone.now(), "status": "Paused"}, InvalidMessage, "Sleeping"),
        ({"status": "Leased"}, InvalidStatus, "lease"),
        ({"status": "no good!"}, InvalidStatus, "malformed"),
        ({"headers": ["a"]}, InvalidMessage, "mapping"),
        ({"headers": {"when": object()}}, InvalidMessage, "JSON"),
    ],
)
def test_enqueue__bad_arguments_store_nothing(kwargs, error, match):
    """Bad arguments raise a clear error before anything is written."""
    with pytest.raises(error, match=match):
        enqueue(GreetingFactory(), **kwargs)
    with pytest.raises(error, match=match):
        enqueue_many(GreetingFactory.build_batch(2), **kwargs)
    assert Greeting.model.objects.count() == 0


def test_enqueue__refuses_non_messages():
    with pytest.raises(InvalidMessage, match="message class"):
        enqueue({"name": "Ada"})


def test_enqueue_many__refuses_mixed_queues_and_stores_nothing():
    with pytest.raises(InvalidMessage, match="one queue"):
        enqueue_many([GreetingFactory(), AuditFactory()])
    assert Greeting.model.objects.count() == Audit.model.objects.count() == 0


def test_enqueue_many__one_bad_message_id_stores_nothing():
    """A batch with one message whose id is unusable is refused whole."""
    batch = [*ProductFactory.build_batch(3), ProductFactory(sku="")]
    with pytest.raises(InvalidMessage, match="message_id"):
        enqueue_many(batch)
    assert Product.model.objects.count() == 0


def test_enqueue__message_id_too_long():
    with pytest.raises(InvalidMessage, match="longer than 255"):
        enqueue(ProductFactory(sku="x" * 256))
    assert Product.model.objects.count() == 0


def _in_orders(messages, callers):
    """The same messages in a different order for each caller: forwards, backwards, shuffled."""
    orders = [list(messages), list(reversed(messages))]
    for seed in range(callers - 2):
        shuffled = list(messages)
        random.Random(seed).shuffle(shuffled)
        orders.append(shuffled)
    return orders[:callers]


@pytest.mark.django_db(transaction=True)
def test_enqueue_many__overlapping_batches_in_any_order_all_succeed():
    """Callers upserting the same ids in different orders at once all succeed; each id is stored once."""
    messages = [InventoryFactory(sku=f"SKU-{n:03}", quantity=n) for n in range(200)]
    batches = _in_orders(messages, 4)
    results = together(*[lambda batch=batch: [enqueue_many(batch) for _ in range(5)] for batch in batches])
    for batch, calls in zip(batches, results, strict=True):
        assert all(result.stored == tuple(batch) for result in calls)
    assert Inventory.model.objects.count() == 200
    assert set(Inventory.model.objects.values_list("status", flat=True)) == {Status.PENDING}


@pytest.mark.django_db(transaction=True)
def test_enqueue_many__racing_callers_store_each_change_once():
    """Callers racing with the same messages of an idempotent queue count each row they change once, together."""
    enqueue_many([ProductFactory(sku=f"SKU-{n:03}", name="old") for n in range(0, 150, 2)])
    messages = [ProductFactory(sku=f"SKU-{n:03}", name="new") for n in range(150)]
    enqueue_many(messages[:20:2])  # ten stored already as they are sent
    results = together(*[lambda: enqueue_many(messages)] * 4)
    for result in results:
        assert sorted(result.stored + result.discarded, key=messages.index) == messages
    assert sum(len(result.stored) for result in results) == 150 - 10
    assert Product.model.objects.count() == 150
    assert set(Product.model.objects.values_list("message__name", flat=True)) == {"new"}


@pytest.mark.django_db(transaction=True)
def test_enqueue__racing_callers_store_one_message_once():
    """One message of an idempotent queue sent by several callers at once is stored by one of them."""
    message = ProductFactory(sku="A")
    results = together(*[lambda: enqueue(message)] * 4)
    assert sorted(len(result.stored) for result in results) == [0, 0, 0, 1]
    assert Product.model.objects.count() == 1
