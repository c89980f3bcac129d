"""Enqueue reports the row ids it stored when asked (``return_ids=True``), on every insert path."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nexus_queues import enqueue, enqueue_many
from tests.factories import GreetingFactory, InventoryFactory, ProductFactory
from tests.testapp.queues import Greeting, Inventory, Product

pytestmark = pytest.mark.django_db


def ids(message_class):
    return list(message_class.queue_model.objects.order_by("id").values_list("id", flat=True))


def test_enqueue__ids_only_when_asked():
    """Without return_ids the result holds no ids (None, not an empty tuple)."""
    assert enqueue(GreetingFactory()).ids is None
    assert enqueue_many(InventoryFactory.build_batch(2)).ids is None


def test_enqueue__return_ids_gives_the_new_row():
    """One message, with or without identity: the id of the row now holding it."""
    plain = enqueue(GreetingFactory(), return_ids=True)
    keyed = enqueue(ProductFactory(sku="P1"), return_ids=True)
    assert plain.ids == tuple(ids(Greeting))
    assert keyed.ids == (Product.queue_model.objects.get(message_id="P1").pk,)


def test_enqueue__replacing_identity_returns_the_kept_row():
    """A new version of a message id is stored in the row already holding that id."""
    first = enqueue(InventoryFactory(sku="S", quantity=1), return_ids=True)
    second = enqueue(InventoryFactory(sku="S", quantity=2), return_ids=True)
    assert first.ids == second.ids == tuple(ids(Inventory))


def test_enqueue_many__return_ids_in_message_order():
    """A batch (COPY on PostgreSQL) reports its rows' ids in the order of its messages, growing (FIFO)."""
    enqueue(GreetingFactory())
    messages = GreetingFactory.build_batch(5)
    result = enqueue_many(messages, return_ids=True)
    rows = Greeting.queue_model.objects.order_by("id")[1:]
    assert result.ids == tuple(row.pk for row in rows) and list(result.ids) == sorted(result.ids)
    assert [row.message for row in rows] == messages


def test_enqueue_many__identity_ids_follow_stored():
    """With identity, ids line up with ``stored``; discarded and superseded messages have none."""
    enqueue(ProductFactory(sku="A", name="same"))
    batch = [ProductFactory(sku="B", name="1"), ProductFactory(sku="A", name="same"), ProductFactory(sku="B", name="2")]
    result = enqueue_many(batch, return_ids=True)
    assert result.stored == (batch[2],) and result.discarded == (batch[1],) and result.superseded == (batch[0],)
    assert result.ids == (Product.queue_model.objects.get(message_id="B").pk,)


def test_enqueue_many__large_batch_ids(settings):
    """Ids stay right across the engines' statement batches."""
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "BATCH_SIZE": 7}
    result = enqueue_many(GreetingFactory.build_batch(30), return_ids=True)
    assert result.ids == tuple(ids(Greeting))


@pytest.mark.engines("mysql")
def test_enqueue_many__ids_on_mysql_without_insert_returning(monkeypatch):
    """MySQL (no INSERT ... RETURNING, unlike MariaDB) gets each row's id from its own insert."""
    monkeypatch.setattr(type(connection.features), "can_return_rows_from_bulk_insert", False)
    with CaptureQueriesContext(connection) as captured:
        result = enqueue_many(GreetingFactory.build_batch(3), return_ids=True)
    assert result.ids == tuple(ids(Greeting))
    assert not [q for q in captured if "RETURNING" in q["sql"]]
