"""Merges of staged rows when other writers overlap: a row lock held from a third connection makes each race happen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from nexus_queues import Status, batches, enqueue, staging
from nexus_queues.models import Batch
from nexus_queues.serialization import canonical_json, json_hash
from nexus_queues.staging import MergeCounts, StagedRow
from tests.commands import wait_until
from tests.locks import Background, lock_waits, row_held, waiting
from tests.testapp.queues import Inventory, Product

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engines("postgresql", "mysql")]


def staged_rows(messages: list[Any], token: int) -> list[StagedRow]:
    rows = []
    for position, message in enumerate(messages):
        text = canonical_json(message)
        rows.append(StagedRow(token, position, message.message_id, text, json_hash(text), "{}", None, None, None, None))
    return rows


def merged(
    message_class: Any, messages: list[Any], on_wait: Callable[[], None] = lambda: None, *, batched: bool = False
) -> MergeCounts:
    """Stage ``messages`` and merge them in a transaction of the merge's own, as a sync's commit does; ``batched``:
    the messages it writes form a batch, as a sync's do."""
    alias = message_class.queue_options.database
    table = staging.new_table_name(message_class.queue_name())
    token = staging.new_token()
    staging.create(alias, table)
    try:
        staging.stage(alias, table, staged_rows(messages, token))
        with staging.turn(message_class, on_wait):
            batch = batches.create(message_class) if batched else None
            return staging.merge(message_class, table, [token], notify=False, batch=batch)
    finally:
        staging.drop(alias, table)


def stored(message_class: Any, message_id: str) -> Any:
    return message_class.queue_items().get(message_id=message_id)


def test_merge__leaves_a_message_stored_while_it_waited(db: None) -> None:
    """A merge that waited on a row leaves it alone when, meanwhile, another writer stored the same message and a
    worker processed it: it is not set Pending again (not run twice), and counts as unchanged."""
    enqueue(Product(sku="A", name="Old"))
    new = Product(sku="A", name="New")

    with row_held(Product, "A") as then:
        merge = Background(lambda: merged(Product, [new]))
        wait_until(waiting(merge), "the merge to wait on the held row")
        then(lambda: enqueue(new))
        then(lambda: Product.queue_items().filter(message_id="A").update(status=Status.PROCESSED))

    assert merge.outcome() == MergeCounts(unchanged=1)
    row = stored(Product, "A")
    assert (row.status, row.message) == (Status.PROCESSED, new)


@pytest.mark.engines("postgresql")  # MariaDB/MySQL's merge locks every row it reads (locks_rows_before_merge)
def test_merge__into_a_batch_leaves_unchanged_members_of_an_open_batch_unlocked(db: None) -> None:
    """A re-sync while an earlier sync's batch still waits neither rewrites nor locks its unchanged members (it
    finishes while a worker holds one), and moves a changed member to its own batch."""
    merged(Product, [Product(sku="A", name="A"), Product(sku="B", name="B")], batched=True)
    earlier = Batch.objects.get()

    with row_held(Product, "A"):
        resync = [Product(sku="A", name="A"), Product(sku="B", name="B2")]
        again = Background(lambda: merged(Product, resync, batched=True))
        assert again.outcome() == MergeCounts(changed=1, unchanged=1)

    later = Batch.objects.exclude(pk=earlier.pk).get()
    earlier.refresh_from_db()
    assert (earlier.total, later.total) == (1, 1)
    assert stored(Product, "A").headers["nexus_batch"] == earlier.pk
    assert stored(Product, "B").headers["nexus_batch"] == later.pk


def test_merge__into_a_batch_keeps_a_member_whose_newest_staged_message_is_unchanged(db: None) -> None:
    """A message staged twice, changed then as stored: the last staged wins, so it stays in the earlier batch."""
    merged(Product, [Product(sku="A", name="A")], batched=True)
    earlier = Batch.objects.get()

    counts = merged(Product, [Product(sku="A", name="Changed"), Product(sku="A", name="A")], batched=True)

    assert counts == MergeCounts(unchanged=1, superseded=1)
    earlier.refresh_from_db()
    assert (earlier.total, Batch.objects.count()) == (1, 1)
    assert (stored(Product, "A").message.name, stored(Product, "A").headers["nexus_batch"]) == ("A", earlier.pk)


def test_merge__leaves_a_leased_unchanged_message_to_its_worker(db: None) -> None:
    """A merge that waited on a row that was then leased with the staged message leaves the lease to its worker."""
    enqueue(Product(sku="A", name="Old"))
    new = Product(sku="A", name="New")
    lease = {"status": Status.LEASED, "correlation_id": "worker-1", "lease_expires_at": timezone.now(), "attempts": 1}

    with row_held(Product, "A") as then:
        merge = Background(lambda: merged(Product, [new]))
        wait_until(waiting(merge), "the merge to wait on the held row")
        then(lambda: enqueue(new))
        then(lambda: Product.queue_items().filter(message_id="A").update(**lease))

    assert merge.outcome() == MergeCounts(unchanged=1)
    row = stored(Product, "A")
    assert (row.status, row.correlation_id, row.attempts) == (Status.LEASED, "worker-1", 1)


def test_merge__replaces_a_leased_changed_message_as_enqueue_does(db: None) -> None:
    """A changed message replaces a Leased row as enqueue would: Pending again, lease and attempts reset."""
    enqueue(Product(sku="A", name="Old"))
    enqueue(Product(sku="B", name="Old"))
    lease = {"status": Status.LEASED, "correlation_id": "worker-1", "lease_expires_at": timezone.now(), "attempts": 1}
    Product.queue_items().update(**lease)

    merged(Product, [Product(sku="A", name="New")])
    enqueue(Product(sku="B", name="New"))

    by_merge, by_enqueue = stored(Product, "A"), stored(Product, "B")
    for row in (by_merge, by_enqueue):
        assert (row.status, row.lease_expires_at, row.attempts) == (Status.PENDING, None, 0)


def test_merge__counts_what_it_did_after_an_overlapping_merge(db: None) -> None:
    """Of two overlapping merges of the same new messages, the second counts them unchanged, not new."""
    products = [Product(sku=f"SKU-{n}", name="Kettle") for n in range(50)]
    enqueue(Product(sku="held", name="Lock"))
    waits: list[str] = []

    with row_held(Product, "held"):
        first = Background(lambda: merged(Product, [*products, Product(sku="held", name="Changed")]))
        wait_until(waiting(first), "the first merge to wait on the held row")
        second = Background(lambda: merged(Product, products, on_wait=lambda: waits.append("waited")))
        wait_until(lambda: waits, "the second merge to wait for its turn")

    assert first.outcome() == MergeCounts(new=50, changed=1)
    assert second.outcome() == MergeCounts(unchanged=50)


def test_merge__counts_on_a_queue_without_idempotency(db: None) -> None:
    """On a queue with identity but no idempotency an unchanged message is stored again, and counted unchanged."""
    enqueue(Inventory(sku="A", quantity=1))
    Inventory.queue_items().update(status=Status.PROCESSED)

    counts = merged(Inventory, [Inventory(sku="A", quantity=1), Inventory(sku="B", quantity=2)])

    assert counts == MergeCounts(new=1, unchanged=1)
    assert stored(Inventory, "A").status == Status.PENDING


@pytest.mark.engines("mysql")
def test_merge__waiting_on_a_row_lets_other_writers_insert(db: None) -> None:
    """A merge waiting on a held row holds no lock on the whole table: enqueues of other messages go on."""
    enqueue(Product(sku="A", name="Old"))

    with row_held(Product, "A"):
        merge = Background(lambda: merged(Product, [Product(sku="A", name="New"), Product(sku="B", name="New")]))
        wait_until(waiting(merge), "the merge to wait on the held row")
        with connection.cursor() as cursor:  # far below the merge's wait: this insert must not wait at all
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
        try:
            enqueue(Product(sku="C", name="Other"))
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT")
        assert lock_waits() == 1

    assert merge.outcome() == MergeCounts(new=1, changed=1)


@pytest.mark.engines("mysql")
def test_merge__outwaits_the_engines_lock_wait_timeout(db: None) -> None:
    """A merge waits on a held row for longer than the connection's innodb_lock_wait_timeout, and then merges."""
    enqueue(Product(sku="A", name="Old"))

    def impatient_merge() -> MergeCounts:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
        return merged(Product, [Product(sku="A", name="New")])

    with row_held(Product, "A"):
        merge = Background(impatient_merge)
        wait_until(waiting(merge, longer_than=2), "the merge to wait on the held row for over 2 s")

    assert merge.outcome() == MergeCounts(changed=1)
