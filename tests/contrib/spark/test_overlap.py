"""Syncs on a real Spark while other writers overlap: a lock held from a third connection makes each race happen."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.db import connection, transaction

from nexus_queues import Status, enqueue, enqueue_many
from nexus_queues.contrib.spark import SyncCounts, sync
from tests.commands import PATIENCE, Commands
from tests.locks import Background, held, lock_waits, row_held, turn_held
from tests.testapp.queues import Inventory, Product

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engines("postgresql", "mysql")]

PRODUCT = "sku string, name string, prices array<struct<currency string, amount decimal(10,2)>>"
SPARK_PATIENCE = 5 * PATIENCE
"""Seconds a test waits for Spark to stage and reach the merge, on a loaded machine."""


def products(count: int, name: str = "Product") -> list[tuple[Any, ...]]:
    return [(f"SKU-{i}", f"{name} {i}", [("EUR", Decimal(f"{i}.95"))]) for i in range(count)]


def product(i: int, name: str) -> Product:
    return Product(sku=f"SKU-{i}", name=f"{name} {i}", prices=[{"currency": "EUR", "amount": f"{i}.95"}])


def meanwhile(hold: Callable[[], Any], changes: list[Callable[[], None]]) -> tuple[Background, threading.Event]:
    """In the background: hold a lock (``hold()``, a context giving ``then``), wait until the sync's merge waits
    on it, then make ``changes`` in the holder's transaction and commit."""
    held = threading.Event()

    def run() -> None:
        with hold() as then:
            held.set()
            deadline = time.monotonic() + SPARK_PATIENCE
            while lock_waits() < 1:
                assert time.monotonic() < deadline, "the sync's merge never waited on the held lock"
                time.sleep(0.05)
            for change in changes:
                then(change)

    work = Background(run)
    assert held.wait(PATIENCE)
    return work, held


def test_sync__leaves_a_message_stored_while_its_merge_waited(frame: Any) -> None:
    """A sync whose merge waited on a row that meanwhile got the synced message, and was processed, leaves it
    processed (not run twice), and counts it unchanged."""
    sync(frame(products(10), PRODUCT), Product)
    Product.queue_items().update(status=Status.PROCESSED)
    processed = lambda: Product.queue_items().filter(message_id="SKU-3").update(status=Status.PROCESSED)  # noqa: E731
    other, _ = meanwhile(lambda: row_held(Product, "SKU-3"), [lambda: enqueue(product(3, "Renamed")), processed])

    counts = sync(frame(products(10, "Renamed"), PRODUCT), Product)

    other.outcome()
    assert counts == SyncCounts(
        new=0, changed=9, unchanged=1, scheduled=0, rejected=0, superseded=0, batch=counts.batch
    )
    statuses = dict(Product.queue_items().values_list("message_id", "status"))
    assert statuses.pop("SKU-3") == Status.PROCESSED
    assert set(statuses.values()) == {Status.PENDING}


def test_sync__waits_its_turn_and_counts_what_it_did(frame: Any) -> None:
    """A sync whose merge overlaps another merge into the queue waits for it, then counts on what it stored:
    the same products, unchanged, not new."""
    other, _ = meanwhile(lambda: turn_held(Product), [lambda: enqueue_many([product(i, "Product") for i in range(50)])])

    counts = sync(frame(products(50), PRODUCT), Product)

    other.outcome()
    assert counts == SyncCounts(new=0, changed=0, unchanged=50, scheduled=0, rejected=0, superseded=0)


def test_sync__into_an_empty_queue_meets_a_message_stored_meanwhile(frame: Any) -> None:
    """A first sync into an empty queue whose insert meets an id that another writer is storing waits for it,
    then merges: the message stored meanwhile with the same JSON is counted unchanged and not stored twice."""

    @contextmanager
    def enqueued() -> Iterator[None]:
        with transaction.atomic():
            enqueue(product(3, "Product"))
            yield

    other, _ = meanwhile(lambda: held(enqueued), [])

    counts = sync(frame(products(10), PRODUCT), Product)

    other.outcome()
    assert counts == SyncCounts(
        new=9, changed=0, unchanged=1, scheduled=0, rejected=0, superseded=0, batch=counts.batch
    )
    assert sorted(Product.queue_items().values_list("message_id", flat=True)) == [f"SKU-{i}" for i in range(10)]


def test_nexus_spark_sync__shows_that_it_waits_its_turn(child_env: dict[str, str], tmp_path: Path) -> None:
    """The command, run while another merge into the queue holds its turn, says that it waits, then merges."""
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"sku": ["SKU-1", "SKU-2"], "quantity": pa.array([1, 2], pa.int64())}), path)
    commands = Commands(child_env, tmp_path)
    try:
        with turn_held(Inventory):
            command = commands.start("nexus_spark_sync", "--queue", "inventory", "--input", str(path))
            deadline = time.monotonic() + SPARK_PATIENCE
            while "waits for another sync of the queue to finish merging" not in command.log():
                assert command.proc.poll() is None and time.monotonic() < deadline, command.log()[-3000:]
                time.sleep(0.1)
        assert command.finish() == 0, command.log()[-3000:]
    finally:
        commands.kill_the_rest()
    assert Inventory.queue_items().count() == 2


def test_sync__overlapping_syncs_wait_for_a_held_row_then_count(frame: Any) -> None:
    """Two syncs of the same products overlap while a third connection holds a stored row longer than the server's
    lock wait timeout (MariaDB's innodb_lock_wait_timeout, 50 s): the first merge waits for the row, the second for
    the first merge; then each stores and counts what it found (MariaDB failed the first after 50 s, error 1205
    from the lock of a changed batch member, nothing stored)."""
    sync(frame(products(100), PRODUCT), Product)
    renamed = [(sku, "Renamed" if sku == "SKU-3" else name, prices) for sku, name, prices in products(100)]
    first_df, second_df = frame(renamed, PRODUCT), frame(renamed, PRODUCT)

    with row_held(Product, "SKU-3"):
        first = Background(lambda: sync(first_df, Product))
        _wait_for(lambda: lock_waits(longer_than=_lock_wait_timeout()) == 1, first)
        second = Background(lambda: sync(second_df, Product))
        _wait_for(lambda: lock_waits() == 2, second)

    first_counts, second_counts = first.outcome(), second.outcome()
    assert first_counts == SyncCounts(
        new=0, changed=1, unchanged=99, scheduled=0, rejected=0, superseded=0, batch=first_counts.batch
    )
    assert first_counts.batch is not None
    assert second_counts == SyncCounts(new=0, changed=0, unchanged=100, scheduled=0, rejected=0, superseded=0)
    assert Product.queue_items().get(message_id="SKU-3").message.name == "Renamed"


def _lock_wait_timeout() -> int:
    """Seconds after which the server fails a statement waiting for a row lock by default (PostgreSQL: never)."""
    if connection.vendor != "mysql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@GLOBAL.innodb_lock_wait_timeout")
        return int(cursor.fetchone()[0])


def _wait_for(condition: Callable[[], bool], work: Background) -> None:
    deadline = time.monotonic() + SPARK_PATIENCE
    while not condition():
        if not work.thread.is_alive():
            work.outcome()  # what it raised
        assert time.monotonic() < deadline, "the sync never waited on the lock"
        time.sleep(0.05)
