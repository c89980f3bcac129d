"""Enqueue: statuses, scheduling, identity, idempotency, batching, and refusing bad input."""

import math
import random
from datetime import UTC, datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import Status, dispatch_due, enqueue, enqueue_many, lease, set_default_status
from nexus_queues.exceptions import InvalidArgument, InvalidMessage, InvalidStatus, UnstorableValue
from nexus_queues.limits import EARLIEST_DATETIME, LATEST_DATETIME, MAX_JSON_DEPTH
from tests.factories import AuditFactory, GreetingFactory, InventoryFactory, ProductFactory
from tests.races import together
from tests.testapp.queues import Audit, Greeting, Inventory, Product

pytestmark = pytest.mark.django_db


def rows(message_class):
    return list(message_class.queue_model.objects.order_by("id"))


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
    Inventory.queue_model.objects.update(attempts=3, error_type="x.Y", error_message="boom")
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
    Inventory.queue_model.objects.update(status="Hold")
    assert enqueue(message).stored == (message,)
    assert rows(Inventory)[0].status == Status.PENDING


def test_enqueue__idempotent_discards_equal_message_whatever_key_order():
    """An idempotent queue drops a message whose id and canonical JSON are stored; key order does not matter."""
    enqueue(ProductFactory(sku="A", attributes={"color": "red", "size": "L"}))
    Product.queue_model.objects.update(status=Status.PROCESSED)
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


# Within the test's transaction, a savepoint around: the default status read, the rows (COPY, or
# INSERT after SQLite's write lock), and PostgreSQL's NOTIFY.
BATCH_STATEMENTS = {"postgresql": 5, "sqlite": 5, "mysql": 4}


def test_enqueue_many__is_batched():
    """The number of statements does not grow with the number of messages."""
    with CaptureQueriesContext(connection) as small:
        enqueue_many(GreetingFactory.build_batch(10))
    with CaptureQueriesContext(connection) as large:
        enqueue_many(GreetingFactory.build_batch(3000))
    assert len(large.captured_queries) == len(small.captured_queries) == BATCH_STATEMENTS[connection.vendor]
    assert Greeting.queue_model.objects.count() == 3010


# A savepoint around: the default status read (SQLite's write lock first), then per 1,000 messages
# one upsert (MariaDB/MySQL: a locked read and an insert).
IDENTITY_STATEMENTS = {"postgresql": 5, "sqlite": 6, "mysql": 7}


def test_enqueue_many__identity_batched():
    """Identity queues upsert in chunks, not one statement per message."""
    with CaptureQueriesContext(connection) as ctx:
        enqueue_many(ProductFactory.build_batch(1500))
    assert Product.queue_model.objects.count() == 1500
    assert len(ctx.captured_queries) == IDENTITY_STATEMENTS[connection.vendor]


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
        ({"at": timezone.now(), "delay": timedelta(1)}, InvalidArgument, "not both"),
        ({"delay": timedelta(seconds=-1)}, InvalidArgument, "non-negative"),
        ({"delay": 5}, InvalidArgument, "timedelta"),
        ({"at": "tomorrow"}, InvalidArgument, "datetime"),
        ({"at": timezone.now().replace(tzinfo=None)}, InvalidArgument, "timezone-aware"),
        ({"at": timezone.now(), "status": "Paused"}, InvalidArgument, "Sleeping"),
        ({"status": "Leased"}, InvalidStatus, "lease"),
        ({"status": "no good!"}, InvalidStatus, "malformed"),
        ({"headers": ["a"]}, InvalidArgument, "mapping"),
        ({"headers": {"when": object()}}, InvalidArgument, "JSON"),
    ],
)
def test_enqueue__bad_arguments_store_nothing(kwargs, error, match):
    """Bad arguments raise a clear error before anything is written."""
    with pytest.raises(error, match=match):
        enqueue(GreetingFactory(), **kwargs)
    with pytest.raises(error, match=match):
        enqueue_many(GreetingFactory.build_batch(2), **kwargs)
    assert Greeting.queue_model.objects.count() == 0


def test_enqueue__refuses_non_messages():
    with pytest.raises(InvalidMessage, match="message class"):
        enqueue({"name": "Ada"})


def test_enqueue_many__refuses_mixed_queues_and_stores_nothing():
    with pytest.raises(InvalidMessage, match="one queue"):
        enqueue_many([GreetingFactory(), AuditFactory()])
    assert Greeting.queue_model.objects.count() == Audit.queue_model.objects.count() == 0


def test_enqueue_many__one_bad_message_id_stores_nothing():
    """A batch with one message whose id is unusable is refused whole."""
    batch = [*ProductFactory.build_batch(3), ProductFactory(sku="")]
    with pytest.raises(InvalidMessage, match="message_id"):
        enqueue_many(batch)
    assert Product.queue_model.objects.count() == 0


def test_enqueue__message_id_too_long():
    with pytest.raises(InvalidMessage, match="longer than 255"):
        enqueue(ProductFactory(sku="x" * 256))
    assert Product.queue_model.objects.count() == 0


BEFORE_YEAR_1 = datetime(1, 1, 1, tzinfo=dt_timezone(timedelta(hours=14)))  # 0000-12-31 10:00 UTC
AFTER_9999 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt_timezone(timedelta(hours=-10)))  # 10000-01-01 UTC
MICROSECOND = timedelta(microseconds=1)
OUT_OF_RANGE = "outside the supported range .* [(]EARLIEST_DATETIME to LATEST_DATETIME[)]"
NOT_A_NUMBER = "is not a JSON number [(]NaN and infinities cannot be stored[)]"
TOO_DEEP = f"deeper than {MAX_JSON_DEPTH} [(]MAX_JSON_DEPTH[)]"


def deep(depth):
    """Objects nested ``depth`` deep, the outermost counting as 1."""
    data = {}
    for _ in range(depth - 1):
        data = {"a": data}
    return data


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"at": BEFORE_YEAR_1}, "at"),
        ({"at": EARLIEST_DATETIME - MICROSECOND}, "at"),
        ({"at": datetime(9999, 12, 31, tzinfo=UTC)}, "at"),
        ({"expires_at": AFTER_9999}, "expires_at"),
        ({"expires_at": LATEST_DATETIME + MICROSECOND}, "expires_at"),
        ({"delay": timedelta.max}, "delay"),
        ({"delay": timedelta(days=3_000_000)}, "delay"),
    ],
)
def test_enqueue__times_out_of_range_store_nothing(kwargs, field):
    """A time outside the supported range (or now + a delay past it) is refused, naming it and the range."""
    for call, messages in ((enqueue, GreetingFactory()), (enqueue_many, GreetingFactory.build_batch(2))):
        with pytest.raises(UnstorableValue, match=OUT_OF_RANGE) as caught:
            call(messages, **kwargs)
        assert caught.value.field == field
    assert Greeting.queue_model.objects.count() == 0


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "Etc/GMT+12"])
def test_enqueue__times_at_the_limits_are_stored_and_read_back(settings, zone):
    """The first and last supported times are stored, dispatched, leased and shown on every engine, in any TIME_ZONE."""
    settings.TIME_ZONE = zone
    enqueue(GreetingFactory(name="first"), at=EARLIEST_DATETIME, expires_at=LATEST_DATETIME)
    enqueue(GreetingFactory(name="last"), at=LATEST_DATETIME)
    first, last = rows(Greeting)
    assert (first.process_at, first.expires_at) == (EARLIEST_DATETIME, LATEST_DATETIME)
    assert last.process_at == LATEST_DATETIME
    assert [timezone.localtime(t).year for t in (first.process_at, last.process_at)] in ([1000, 9999], [999, 9999])
    assert dispatch_due()["greetings"] == 1
    [item] = lease(Greeting, 10)
    assert (item.message.name, item.process_at, item.expires_at) == ("first", EARLIEST_DATETIME, LATEST_DATETIME)


UNSTORABLE = {
    "NaN in free-form data": (lambda: Audit(event="e", details={"x": math.nan}), "Audit.details.x", NOT_A_NUMBER),
    "1e400 in a list": (lambda: Audit(event="e", details={"x": [1, 1e400]}), "Audit.details.x.1", NOT_A_NUMBER),
    "infinity in a typed float": (
        lambda: Audit.model_construct(event="e", duration=-math.inf, details={}), "Audit.duration", NOT_A_NUMBER
    ),
    "NUL in text": (lambda: Audit(event="a\x00b"), "Audit.event", "holds NUL"),
    "NUL in a key": (lambda: Audit(event="e", details={"k\x00": 1}), "Audit.details", "holds NUL"),
    "lone surrogate": (lambda: Audit(event="\ud800"), "Audit.event", "lone surrogate"),
    "lone surrogate in a key": (lambda: Audit(event="e", details={"\udfff": 1}), "Audit.details", "lone surrogate"),
    "900 deep": (lambda: Audit(event="e", details=deep(900)), "Audit.details" + ".a" * (MAX_JSON_DEPTH - 1), TOO_DEEP),
    "one level too deep": (
        lambda: Audit(event="e", details=deep(MAX_JSON_DEPTH)), "Audit.details" + ".a" * (MAX_JSON_DEPTH - 1), TOO_DEEP
    ),
}


@pytest.mark.parametrize("case", list(UNSTORABLE))
def test_enqueue__unstorable_message_stores_nothing(case):
    """A message not every engine stores is refused by enqueue and enqueue_many (whole), naming the field."""
    build, field, problem = UNSTORABLE[case]
    for call, messages in ((enqueue, build()), (enqueue_many, [AuditFactory(), build(), AuditFactory()])):
        with pytest.raises(UnstorableValue, match=problem) as caught:
            call(messages)
        assert caught.value.field == field
    assert Audit.queue_model.objects.count() == 0


def test_enqueue_many__names_the_unstorable_message_by_position():
    """In a batch, the error says which message holds the unstorable value."""
    with pytest.raises(UnstorableValue, match=r"^message 2: Audit.event: holds NUL") as caught:
        enqueue_many([AuditFactory(), AuditFactory(), Audit(event="\x00")])
    assert (caught.value.index, caught.value.field) == (2, "Audit.event")


def test_enqueue_many__unstorable_message_after_rows_already_sent_stores_nothing():
    """PostgreSQL's COPY streams rows while later ones are made: one refused after thousands were sent leaves the
    queue as it was, and the connection takes the next batch."""
    messages = [Audit(event=f"e{i}") for i in range(2500)]
    messages[2400] = Audit(event="\x00")
    with pytest.raises(UnstorableValue, match=r"^message 2400: Audit.event: holds NUL"):
        enqueue_many(messages)
    assert Audit.queue_model.objects.count() == 0
    assert len(enqueue_many(messages[:3]).stored) == 3


@pytest.mark.parametrize(
    ("sku", "problem"), [("A\x00", "holds NUL"), ("\ud800", "lone surrogate")]
)
def test_enqueue_many__unstorable_message_id_stores_nothing(sku, problem):
    """A message id with NUL or a lone surrogate is refused and the batch with it stores nothing."""
    with pytest.raises(UnstorableValue, match=problem):
        enqueue_many([ProductFactory(), ProductFactory(sku=sku)])
    assert Product.queue_model.objects.count() == 0


@pytest.mark.parametrize(
    ("headers", "field", "problem"),
    [
        ({"x": math.inf}, "headers.x", "not a JSON number"),
        ({"x": [math.nan]}, "headers.x.0", "not a JSON number"),
        ({"x": "\x00"}, "headers.x", "holds NUL"),
        ({"\ud800": 1}, "headers", "lone surrogate"),
        ({"x": deep(MAX_JSON_DEPTH)}, "headers.x" + ".a" * (MAX_JSON_DEPTH - 1), TOO_DEEP),
    ],
)
def test_enqueue__unstorable_headers_store_nothing(headers, field, problem):
    """Headers are held to the same rules as messages."""
    for call, messages in ((enqueue, GreetingFactory()), (enqueue_many, GreetingFactory.build_batch(2))):
        with pytest.raises(UnstorableValue, match=problem) as caught:
            call(messages, headers=headers)
        assert caught.value.field == field
    assert Greeting.queue_model.objects.count() == 0


def test_enqueue__deepest_message_and_headers_are_stored_and_read_back():
    """A message and headers nested MAX_JSON_DEPTH deep are stored, leased and read back on every engine."""
    message = Audit(event="deep", details=deep(MAX_JSON_DEPTH - 1))
    enqueue(message, status=Status.PENDING, headers=deep(MAX_JSON_DEPTH))
    [item] = lease(Audit, 1)
    assert (item.message, item.headers) == (message, deep(MAX_JSON_DEPTH))


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
    assert Inventory.queue_model.objects.count() == 200
    assert set(Inventory.queue_model.objects.values_list("status", flat=True)) == {Status.PENDING}


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
    assert Product.queue_model.objects.count() == 150
    assert set(Product.queue_model.objects.values_list("message__name", flat=True)) == {"new"}


@pytest.mark.django_db(transaction=True)
def test_enqueue__racing_callers_store_one_message_once():
    """One message of an idempotent queue sent by several callers at once is stored by one of them."""
    message = ProductFactory(sku="A")
    results = together(*[lambda: enqueue(message)] * 4)
    assert sorted(len(result.stored) for result in results) == [0, 0, 0, 1]
    assert Product.queue_model.objects.count() == 1
