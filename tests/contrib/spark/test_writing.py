"""Writing DataFrames into queues: counts, re-runs, changes, scheduling, all or nothing."""

from __future__ import annotations

import select
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connections
from pyspark.sql import SparkSession

from nexus_queues import Status, enqueue, signals
from nexus_queues.backends import backend_for
from nexus_queues.contrib.spark import SyncCounts, SyncFailed, sync
from nexus_queues.contrib.spark.models import Sync
from tests.testapp.queues import Greeting, Inventory, Product

pytestmark = pytest.mark.django_db(transaction=True)

PRODUCT = "sku string, name string, prices array<struct<currency string, amount decimal(10,2)>>"


def products(count: int, name: str = "Product") -> list[tuple[Any, ...]]:
    return [(f"SKU-{i}", f"{name} {i}", [("EUR", Decimal(f"{i}.95"))]) for i in range(count)]


def test_sync__counts_new_then_unchanged(frame: Any) -> None:
    """A first sync stores every product; the same rows again store nothing on an idempotent queue."""
    df = frame(products(50), PRODUCT)

    first = sync(df, Product)
    again = sync(df, Product)

    assert first == SyncCounts(new=50, changed=0, unchanged=0, scheduled=0, rejected=0, superseded=0, batch=first.batch)
    assert again == SyncCounts(new=0, changed=0, unchanged=50, scheduled=0, rejected=0, superseded=0)
    rows = Product.queue_items()
    assert rows.count() == 50
    assert set(rows.values_list("status", flat=True)) == {Status.PENDING}
    assert Product.queue_items().get(message_id="SKU-7").message == Product(
        sku="SKU-7", name="Product 7", prices=[{"currency": "EUR", "amount": "7.95"}]
    )


def test_sync__hash_matches_enqueue(frame: Any) -> None:
    """A product enqueued one by one and then synced unchanged is recognised as unchanged."""
    enqueue(Product(sku="SKU-1", name="Product 1", prices=[{"currency": "EUR", "amount": "1.95"}]))

    counts = sync(frame(products(3), PRODUCT), Product)

    assert (counts.new, counts.unchanged) == (2, 1)


def test_sync__changed_rows_replace_keeping_previous(frame: Any) -> None:
    """Changed products replace the stored message; the previous processed version stays."""
    sync(frame(products(10), PRODUCT), Product)
    item = Product.queue_items().get(message_id="SKU-3")
    item.previous_message = item.message
    item.status = Status.PROCESSED
    item.save()
    changed = products(10)
    changed[3] = ("SKU-3", "Renamed", [("EUR", Decimal("3.95"))])

    counts = sync(frame(changed, PRODUCT), Product)

    assert (counts.new, counts.changed, counts.unchanged) == (0, 1, 9)
    item.refresh_from_db()
    assert (item.message.name, item.previous_message.name, item.status) == ("Renamed", "Product 3", Status.PENDING)


def test_sync__no_identity_appends_in_order(frame: Any) -> None:
    """Every row of a queue without identity is a new message, stored in the DataFrame's order."""
    rows = [(f"name {i}", i) for i in range(20)]
    df = frame(rows, "name string, times int").orderBy("times").coalesce(1)

    counts = sync(df, Greeting)

    assert (counts.new, counts.unchanged) == (20, 0)
    stored = [item.message.times for item in Greeting.queue_items().order_by("id")]
    assert stored == list(range(20))


def test_sync__not_idempotent_stores_unchanged_again(frame: Any) -> None:
    """On a queue that is not idempotent, unchanged messages are counted unchanged and stored again."""
    df = frame([("A", 1), ("B", 2)], "sku string, quantity int")
    sync(df, Inventory)
    Inventory.queue_items().update(status=Status.PROCESSED)

    counts = sync(df, Inventory)

    assert (counts.new, counts.unchanged) == (0, 2)
    assert set(Inventory.queue_items().values_list("status", flat=True)) == {Status.PENDING}


def test_sync__process_at_schedules(frame: Any) -> None:
    """A row with process_at is Sleeping until then and counted scheduled."""
    later = datetime.now(UTC).replace(microsecond=0) + timedelta(days=3)
    df = frame([("A", 1, later), ("B", 2, None)], "sku string, quantity int, process_at timestamp")

    counts = sync(df, Inventory)

    assert (counts.new, counts.scheduled) == (2, 1)
    a = Inventory.queue_items().get(message_id="A")
    assert (a.status, a.process_at) == (Status.SLEEPING, later)
    assert Inventory.queue_items().get(message_id="B").status == Status.PENDING


def test_sync__last_row_of_an_id_wins(frame: Any, spark: SparkSession) -> None:
    """Two rows with one id in a sync: the later one is stored, the earlier counted superseded."""
    df = frame([("A", 1), ("A", 2)], "sku string, quantity int").coalesce(1)

    counts = sync(df, Inventory)

    assert (counts.new, counts.superseded) == (1, 1)
    assert Inventory.queue_items().get(message_id="A").message.quantity == 2


def test_sync__recorded(frame: Any) -> None:
    """Each sync leaves a record of what it did."""
    sync(frame(products(4), PRODUCT), Product)

    record = Sync.objects.get()
    assert (record.queue, record.state, record.new, record.finished_at is not None) == ("products", "stored", 4, True)


def test_sync__wakes_the_queues_workers_when_it_stored_something(frame: Any) -> None:
    """Workers listening for the queue are woken when a sync stored messages, not by one that stored none."""
    df = frame(products(5), PRODUCT)
    listener = backend_for("default").listen()
    try:
        sync(df, Product)
        assert select.select([listener], [], [], 10)[0] and "products" in listener.received()
        sync(df, Product)
        assert not select.select([listener], [], [], 1)[0] or "products" not in listener.received()
    finally:
        listener.close()


def test_sync__from_another_thread_of_the_driver(frame: Any) -> None:
    """sync() works from a thread that never made the session active, as a thread pool's are."""
    df = frame(products(5), PRODUCT)

    def in_thread() -> SyncCounts:
        try:
            return sync(df, Product)
        finally:
            connections.close_all()  # the thread's own connections, as a project's pool would close them

    with ThreadPoolExecutor(max_workers=1) as pool:
        counts = pool.submit(in_thread).result()

    assert counts.new == 5


def test_sync__sends_synced_once_its_merge_is_committed(frame: Any) -> None:
    """Each stored sync sends ``synced`` once, with its record's id and counts; a failed sync sends none."""
    calls: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        calls.append(
            {"sender": sender, **kwargs, "stored": Sync.objects.filter(pk=kwargs["sync_id"], state="stored").exists()}
        )

    signals.synced.connect(receiver, sender=Product, weak=False)
    try:
        first = sync(frame(products(3), PRODUCT), Product)
        with pytest.raises(SyncFailed):
            sync(frame([("SKU-9", None, [])], PRODUCT), Product)
    finally:
        signals.synced.disconnect(receiver, sender=Product)

    record = Sync.objects.get(state="stored")
    assert [(c["sender"], c["sync_id"], c["counts"], c["stored"]) for c in calls] == [(Product, record.pk, first, True)]


@pytest.mark.parametrize("scale", [2, 3])
def test_sync__decimal_of_another_scale_is_unchanged(frame: Any, scale: int) -> None:
    """24.9 enqueued, then synced from a decimal column of scale 2 (24.90) or 3 (24.900): unchanged, not run again."""
    enqueue(Product(sku="SKU-1", name="Kettle", prices=[{"currency": "EUR", "amount": "24.9"}]))
    schema = f"sku string, name string, prices array<struct<currency string, amount decimal(10,{scale})>>"

    counts = sync(frame([("SKU-1", "Kettle", [("EUR", Decimal("24.9"))])], schema), Product)

    assert (counts.changed, counts.unchanged) == (0, 1)
