"""Completions fenced by the lease holder, and operators' status changes."""

import logging
import threading
import uuid
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import (
    Status,
    abandon_expired_leases,
    default_status,
    enqueue,
    enqueue_many,
    lease,
    mark_error,
    mark_processed,
    reschedule,
    set_default_status,
    set_status,
    update_status,
)
from nexus_queues.exceptions import (
    InvalidLookup,
    InvalidMessage,
    InvalidStatus,
    MessageDoesNotFit,
    NotRegistered,
    UnstorableValue,
)
from nexus_queues.failures import MAX_MESSAGE_LENGTH, MAX_TRACEBACK_LENGTH
from nexus_queues.limits import EARLIEST_DATETIME, LATEST_DATETIME
from nexus_queues.models import JobRun
from nexus_queues.updates import finishing, retry_later, write_finishing
from tests.factories import AuditFactory, GreetingFactory, InventoryFactory, PriceFactory, ProductFactory
from tests.races import together
from tests.testapp.queues import Audit, Greeting, Inventory, Product

pytestmark = pytest.mark.django_db


def leased(message_class, factory, n=1, **lease_kwargs):
    enqueue_many(factory.build_batch(n))
    return lease(message_class, n, **lease_kwargs)


def test_mark_processed__deletes_when_queue_keeps_none():
    [item] = leased(Greeting, GreetingFactory)
    assert mark_processed([item]) == [item.pk]
    assert not Greeting.queue_model.objects.exists()


def test_mark_processed__keeps_row_and_previous_version():
    """Kept queues mark the row Processed and store the message as the previous version."""
    [item] = leased(Inventory, InventoryFactory)
    assert mark_processed([item])
    row = Inventory.queue_model.objects.get()
    assert row.status == Status.PROCESSED and row.previous_message == item.message
    assert row.processed_at is not None and row.lease_expires_at is None
    assert item.status == Status.PROCESSED


def test_mark_processed__without_identity_holds_the_message_once():
    """A queue without identity never stores a later version of a message: its Processed row keeps no previous one
    (the message's second copy in every kept row, and in the WAL)."""
    enqueue_many(AuditFactory.build_batch(2), status=Status.PENDING)
    items = lease(Audit, 2)
    assert mark_processed(items)
    assert list(Audit.queue_model.objects.values_list("status", "previous_message")) == [(Status.PROCESSED, None)] * 2
    assert [item.previous_message for item in items] == [None, None]


@pytest.mark.engines("postgresql")
def test_finishing__without_identity_holds_the_message_once():
    """The same through a worker's one-statement acknowledgement."""
    enqueue_many(AuditFactory.build_batch(2), status=Status.PENDING)
    run = JobRun(job="audit", queue="audits", correlation_id=uuid.uuid4().hex, worker="h:1", started_at=timezone.now())
    items = lease(Audit, 2, correlation_id=run.correlation_id, run=run)
    ready = finishing(items, run, now=timezone.now())
    assert ready is not None
    write_finishing(ready)
    assert list(Audit.queue_model.objects.values_list("status", "previous_message")) == [(Status.PROCESSED, None)] * 2


def test_previous_message__is_the_last_processed_version():
    """A new version keeps the processed one as previous; a failed one never becomes previous."""
    v1 = ProductFactory(sku="A", name="v1")
    enqueue(v1)
    mark_processed(lease(Product, 1))
    v2 = v1.model_copy(update={"name": "v2"})
    enqueue(v2)
    [item] = lease(Product, 1)
    assert item.message == v2 and item.previous_message == v1
    mark_error([item], RuntimeError("nope"))
    enqueue(v1.model_copy(update={"name": "v3"}))
    [item] = lease(Product, 1)
    assert item.previous_message == v1


def test_mark_processed__batch_in_one_call():
    items = leased(Inventory, InventoryFactory, 5)
    assert sorted(mark_processed(items)) == sorted(i.pk for i in items)
    assert set(Inventory.queue_model.objects.values_list("status", flat=True)) == {Status.PROCESSED}


def test_mark_error__keeps_exception_and_traceback():
    [item] = leased(Greeting, GreetingFactory)
    try:
        raise ValueError("printer on fire")
    except ValueError as exc:
        assert mark_error([item], exc)
    row = Greeting.queue_model.objects.get()
    assert row.status == Status.ERROR
    assert row.error_type == "builtins.ValueError" and row.error_message == "printer on fire"
    assert (
        "Traceback" in row.error_traceback and "test_mark_error__keeps_exception_and_traceback" in row.error_traceback
    )
    assert row.lease_expires_at is None


class Unprintable(Exception):
    """An exception whose str() raises."""

    def __str__(self):
        raise RuntimeError("no text")


def raised(exc):
    """``exc`` with the traceback of having been raised."""
    try:
        raise exc
    except BaseException as caught:
        return caught


@pytest.mark.parametrize(
    ("exc", "message", "last_line"),
    [
        (lambda: ValueError("stock\x00level"), "stock\\x00level", "ValueError: stock\\x00level"),
        (lambda: ValueError("lone \ud800"), "lone \\ud800", "ValueError: lone \\ud800"),
        (Unprintable, "<str() of Unprintable raised RuntimeError>", "Unprintable: <exception str() failed>"),
    ],
    ids=["nul", "surrogate", "str-raises"],
)
@pytest.mark.parametrize(
    "record", [mark_error, lambda items, exc: retry_later(items, exc, timezone.now())], ids=["error", "retry"]
)
def test_error_details__any_exception_is_stored(record, exc, message, last_line):
    """NUL and lone surrogates are stored escaped and a failing str() is described, on every engine."""
    [item] = leased(Greeting, GreetingFactory)
    exc = raised(exc())
    assert record([item], exc) == [item.pk]
    row = Greeting.queue_model.objects.get()
    assert row.status in (Status.ERROR, Status.SLEEPING) and row.lease_expires_at is None
    assert (row.error_type, row.error_message) == (f"{type(exc).__module__}.{type(exc).__qualname__}", message)
    assert row.error_traceback.startswith("Traceback") and row.error_traceback.endswith(f"{last_line}\n")


def test_error_details__cut_to_what_the_columns_hold():
    """A type name over 255 characters and a 20 MB message (over MariaDB's packet size) are stored cut."""
    exc = raised(type("E" * 300, (Exception,), {})("x" * 20_000_000))
    [item] = leased(Greeting, GreetingFactory)
    assert mark_error([item], exc) == [item.pk]
    row = Greeting.queue_model.objects.get()
    assert row.status == Status.ERROR
    assert len(row.error_type) == 255 and row.error_type.startswith(f"{__name__}.EEE")
    assert len(row.error_message) == MAX_MESSAGE_LENGTH
    assert row.error_message.startswith("xxx") and row.error_message.endswith("xxx")
    assert "[... 20000000 characters, cut to 10000 ...]" in row.error_message
    assert len(row.error_traceback) == MAX_TRACEBACK_LENGTH and "Traceback" in row.error_traceback


def test_reschedule__sleeps_until_time():
    [item] = leased(Greeting, GreetingFactory)
    at = timezone.now() + timedelta(hours=1)
    assert reschedule([item], at)
    row = Greeting.queue_model.objects.get()
    assert (row.status, row.process_at) == (Status.SLEEPING, at)


def test_set_status__custom_hides_from_workers():
    [item] = leased(Greeting, GreetingFactory)
    assert set_status([item], "WaitingForProduct")
    assert Greeting.queue_model.objects.get().status == "WaitingForProduct"
    assert lease(Greeting, 1) == []
    with pytest.raises(InvalidStatus):
        set_status([item], Status.SLEEPING)


def test_completion__fenced_after_abandon(caplog):
    """A worker whose lease expired and was abandoned cannot complete; the row is left as it is."""
    now = timezone.now()
    [item] = leased(Inventory, InventoryFactory, lease_time=timedelta(seconds=1), now=now)
    abandon_expired_leases(now + timedelta(seconds=2))
    with caplog.at_level(logging.WARNING, logger="nexus_queues"):
        assert mark_processed([item]) == []
        assert mark_error([item], RuntimeError("late")) == []
    row = Inventory.queue_model.objects.get()
    assert row.status == Status.ABANDONED and row.previous_message is None and row.error_type == ""
    assert any(
        r.action == "lease_lost" and item.correlation_id == getattr(r, "nexus.correlation_id") for r in caplog.records
    )


def test_completion__fenced_after_release_and_new_lease():
    """When another run leased the row since, the first run's completion changes nothing."""
    [first] = leased(Greeting, GreetingFactory)
    update_status(Greeting, Status.PENDING, id=first.pk)
    [second] = lease(Greeting, 1)
    assert mark_processed([first]) == []
    assert Greeting.queue_model.objects.get().correlation_id == second.correlation_id
    assert mark_processed([second]) == [second.pk]
    assert not Greeting.queue_model.objects.exists()


def test_completion__needs_a_lease():
    enqueue(GreetingFactory())
    row = Greeting.queue_model.objects.get()
    with pytest.raises(InvalidMessage, match="never leased"):
        mark_processed([row])


def test_update_status__by_json_property():
    """Messages whose JSON properties match get the status, in one statement."""
    enqueue_many([ProductFactory(sku="A", prices=[PriceFactory(currency="SEK")]), ProductFactory(sku="B")])
    enqueue(InventoryFactory(sku="A"), status="WaitingForProduct")
    enqueue(InventoryFactory(sku="B"), status="WaitingForProduct")
    assert update_status(Inventory, Status.PENDING, message__sku="A") == 1
    assert dict(Inventory.queue_model.objects.values_list("message_id", "status")) == {
        "A": "Pending",
        "B": "WaitingForProduct",
    }
    assert update_status(Product, "Hold", message__prices__0__currency="SEK") == 1
    assert Product.queue_model.objects.get(message_id="A").status == "Hold"


@pytest.mark.engines("postgresql")
def test_update_status__by_json_property_reads_an_index_on_its_path_on_postgresql():
    """An index on ``(message -> 'name')``, as the statuses guide shows, is what ``message__name=...`` compares:
    the statement update_status runs reads it instead of the whole table."""
    enqueue_many([ProductFactory(sku="A", name="Chair"), ProductFactory(sku="B", name="Table")])
    with connection.cursor() as cursor:
        cursor.execute("CREATE INDEX products_message_name ON nexus_products ((message -> 'name'))")
        cursor.execute("SET LOCAL enable_seqscan = off")
        with CaptureQueriesContext(connection) as queries:
            assert update_status(Product, "Hold", message__name="Chair") == 1
        (statement,) = [q["sql"] for q in queries if q["sql"].startswith("UPDATE")]
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row for (row,) in cursor.fetchall())
    assert "products_message_name" in plan and "Seq Scan" not in plan, plan


def test_update_status__by_status_and_queue_name():
    enqueue_many(AuditFactory.build_batch(3))
    assert update_status("audits", Status.PENDING, status="OnHold") == 3
    assert set(Audit.queue_model.objects.values_list("status", flat=True)) == {Status.PENDING}


@pytest.mark.parametrize(
    ("status", "lookups", "error"),
    [
        ("Pending", {"colour": "red"}, InvalidLookup),
        ("Pending", {"id__near": 3}, InvalidLookup),
        ("bad status!", {}, InvalidStatus),
        ("Leased", {}, InvalidStatus),
    ],
)
def test_update_status__bad_input_changes_nothing(status, lookups, error):
    enqueue(GreetingFactory())
    with pytest.raises(error):
        update_status(Greeting, status, **lookups)
    assert Greeting.queue_model.objects.get().status == Status.PENDING


def test_update_status__filter_matching_nothing_changes_nothing():
    """A filter that can match no row (an empty id list) changes nothing and says so."""
    enqueue(GreetingFactory())
    assert update_status(Greeting, "Hold", pk__in=[]) == 0
    assert Greeting.queue_model.objects.get().status == Status.PENDING


def test_update_status__unknown_queue():
    with pytest.raises(NotRegistered):
        update_status("nope", Status.PENDING)


def test_set_default_status__stored_and_validated():
    assert default_status(Greeting) == Status.PENDING
    assert default_status(Audit) == "OnHold"
    set_default_status(Greeting, "Paused")
    assert default_status("greetings") == "Paused"
    with pytest.raises(InvalidStatus):
        set_default_status(Greeting, "Leased")
    assert default_status(Greeting) == "Paused"


def test_stored_json_that_no_longer_fits__clear_error_row_untouched():
    """A row whose JSON no longer fits the class raises MessageDoesNotFit on read; the row stays."""
    enqueue(GreetingFactory(name="Ada"))
    Greeting.queue_model.objects.update(message={"name": "Ada", "times": "many"})
    [item] = lease(Greeting, 1)
    with pytest.raises(MessageDoesNotFit, match=rf"Message {item.pk} of queue 'greetings'.*times"):
        _ = item.message
    assert mark_error([item], RuntimeError("does not fit"))
    row = Greeting.queue_model.objects.get()
    assert row.status == Status.ERROR
    assert Greeting.queue_model._meta.get_field("message").value_from_object(row) == {"name": "Ada", "times": "many"}


@pytest.mark.parametrize(
    "at",
    [
        datetime(1, 1, 1, tzinfo=dt_timezone(timedelta(hours=14))),
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt_timezone(timedelta(hours=-10))),
        LATEST_DATETIME + timedelta(microseconds=1),
        EARLIEST_DATETIME.replace(tzinfo=None) - timedelta(days=1),
    ],
)
@pytest.mark.parametrize(
    "change", [reschedule, lambda items, at: retry_later(items, ValueError("boom"), at)], ids=["reschedule", "retry"]
)
def test_reschedule__time_out_of_range_changes_nothing(change, at):
    """reschedule and retry_later refuse a time outside the supported range; the row stays leased as it was."""
    [item] = leased(Greeting, GreetingFactory)
    with pytest.raises(UnstorableValue, match="^at: .* is outside the supported range"):
        change([item], at)
    row = Greeting.queue_model.objects.get()
    assert (row.status, row.process_at, row.correlation_id, row.error_message) == (
        Status.LEASED, None, item.correlation_id, ""
    )


def test_reschedule__last_supported_time_is_kept():
    """The latest supported time is a valid time to run again."""
    [item] = leased(Greeting, GreetingFactory)
    assert reschedule([item], LATEST_DATETIME) == [item.pk]
    assert Greeting.queue_model.objects.get().process_at == LATEST_DATETIME


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_update_status__by_json_beside_leasing_workers_reaches_no_one_as_a_deadlock():
    """An operator's JSON-filtered update_status and workers leasing and completing the same rows all finish.

    Rows the update takes from a worker lose their lease and are leased again: none is left Leased.
    """
    for round_ in range(4):
        enqueue_many([InventoryFactory(sku=f"SKU-{round_}-{n:03}", quantity=n % 2) for n in range(250)])
        _operator_beside_workers(Inventory, lambda: update_status(Inventory, Status.PENDING, message__quantity=1))
        assert set(Inventory.queue_model.objects.values_list("status", flat=True)) == {Status.PROCESSED}
    assert not Inventory.queue_model.objects.filter(attempts=0).exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_update_status__by_json_beside_workers_deleting_what_they_complete():
    """The same race on a queue that deletes processed messages: every message is completed and deleted."""
    for _ in range(4):
        enqueue_many([GreetingFactory(times=n % 2) for n in range(250)])
        _operator_beside_workers(Greeting, lambda: update_status(Greeting, Status.PENDING, message__times=1))
        assert not Greeting.queue_model.objects.exists()


def _operator_beside_workers(queue, change, times=30, workers=3):
    """``change()`` ``times`` over, while ``workers`` lease and complete ``queue`` until it is done and drained."""
    operator_done = threading.Event()

    def operator():
        try:
            for _ in range(times):
                change()
        finally:
            operator_done.set()

    def worker():
        while True:
            # Read before leasing: an empty lease after the operator's last change means the queue is drained.
            finished = operator_done.is_set()
            items = lease(queue, 10)
            mark_processed(items)
            if finished and not items:
                return

    together(operator, *[worker] * workers)


@pytest.mark.parametrize(
    ("method", "arguments"),
    [("mark_processed", ()), ("mark_error", (RuntimeError("nope"),)), ("set_status", ("WaitingForProduct",))],
)
def test_item_methods__deprecated_but_still_work(method, arguments):
    """QueueItem's completion methods warn, name the function to call, and still change the row."""
    enqueue(GreetingFactory())
    [item] = lease(Greeting, 1)
    with pytest.warns(DeprecationWarning, match=rf"call nexus_queues\.{method}\("):
        assert getattr(item, method)(*arguments) is True
    assert lease(Greeting, 1) == []
