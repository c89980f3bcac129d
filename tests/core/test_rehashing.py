"""Rehashing: rows an older version stored with decimals at another scale get today's canonical JSON and hash."""

from __future__ import annotations

import importlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from nexus_queues import Status, enqueue
from nexus_queues.rehashing import rehash
from nexus_queues.serialization import canonical_json, json_hash
from tests.testapp.queues import Product

pytestmark = pytest.mark.django_db(transaction=True)


def stored_as_before(sku: str, amount: str, status: str = Status.PENDING) -> int:
    """A product row as an older version stored it: the amount's text as the decimal was given, hashed so."""
    pk = enqueue(Product(sku=sku, name=sku, prices=[{"currency": "EUR", "amount": amount}]), return_ids=True).ids[0]
    data = {"attributes": {}, "name": sku, "prices": [{"amount": amount, "currency": "EUR"}], "sku": sku}
    Product.queue_items().filter(pk=pk).update(
        message=data, message_hash=json_hash(canonical_json(data)), status=status
    )
    return pk


def row(pk: int) -> tuple[str, str, str]:
    item = Product.queue_items().values_list("message", "message_hash", "status").get(pk=pk)
    return item[0]["prices"][0]["amount"], item[1], item[2]


def test_rehash__rewrites_only_rows_whose_json_changes() -> None:
    """Rows with a decimal written at another scale get the canonical text and hash, keeping their status; the
    same message enqueued again is then a duplicate. Rows already canonical are not written (a stale hash stays)."""
    old = stored_as_before("A", "24.90", Status.PROCESSED)
    exponent = stored_as_before("B", "1E+2")
    canonical = stored_as_before("C", "19.5")
    Product.queue_items().filter(pk=canonical).update(message_hash="0" * 64)  # would change if it were written

    done = rehash(Product, batch_size=2)

    assert (done.examined, done.rewritten, done.unreadable) == (3, 2, 0)
    assert row(old) == (
        "24.9",
        json_hash(canonical_json(Product(sku="A", name="A", prices=[{"currency": "EUR", "amount": "24.9"}]))),
        Status.PROCESSED,
    )
    assert row(exponent)[0] == "100"
    assert row(canonical)[1] == "0" * 64
    again = enqueue(Product(sku="A", name="A", prices=[{"currency": "EUR", "amount": "24.900"}]))
    assert (len(again.stored), len(again.discarded)) == (0, 1)
    assert row(old)[2] == Status.PROCESSED


def test_rehash__leaves_rows_that_no_longer_fit_their_class() -> None:
    """A stored message its class refuses is counted and left as it is."""
    pk = stored_as_before("A", "24.90")
    Product.queue_items().filter(pk=pk).update(message={"sku": "A", "prices": [{"amount": "1.0"}]})

    done = rehash(Product)

    assert (done.rewritten, done.unreadable) == (0, 1)


def test_nexus_rehash__reports_per_queue() -> None:
    """The command rehashes the queues asked for and says how many rows it rewrote."""
    stored_as_before("A", "24.90")
    stored_as_before("B", "3")
    out = StringIO()

    call_command("nexus_rehash", "--queue", "products", stdout=out)

    assert out.getvalue() == "products: 1 of 2 rows rewritten.\n"


def test_migration__rehashes_the_queues_of_the_database_it_migrates() -> None:
    """Migration 0008 rehashes every registered queue whose table is on the database being migrated."""
    pk = stored_as_before("A", "24.90")
    migration = importlib.import_module("nexus_queues.migrations.0009_rehash_decimals")

    with connection.schema_editor() as schema_editor:
        migration.rehash_queues(None, schema_editor)

    assert row(pk)[0] == "24.9"
