"""A fenced change leaves each item in memory equal to its row in the database."""

from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import enqueue_many, lease
from nexus_queues.changes import Change, Column
from nexus_queues.status import Status
from nexus_queues.updates import (
    mark_error,
    mark_processed,
    renew_leases,
    reschedule,
    retry_later,
    set_status,
)
from tests.factories import InventoryFactory
from tests.testapp.queues import Inventory

pytestmark = pytest.mark.django_db

LATER = timezone.now() + timedelta(hours=1)

CHANGES = {
    "processed": lambda items: mark_processed(items),
    "error": lambda items: mark_error(items, ValueError("bad sku")),
    "rescheduled": lambda items: reschedule(items, LATER),
    "rescheduled afresh": lambda items: reschedule(items, LATER, reset_attempts=True),
    "retried": lambda items: retry_later(items, KeyError("sku"), LATER),
    "renewed": lambda items: renew_leases(items, LATER),
    "set": lambda items: set_status(items, "OnHold"),
}


def columns(item):
    """Every column's value as the item holds it (messages compared as typed messages)."""
    return {f.attname: getattr(item, f.attname) for f in type(item)._meta.concrete_fields}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_fenced_change__item_in_memory_equals_its_row(change):
    """After the change, each item holds exactly what a fresh read of its row holds."""
    items = _leased_with_history()
    assert change(items) == [item.pk for item in items]
    rows = {row.pk: row for row in Inventory.queue_items().filter(pk__in=[i.pk for i in items])}
    for item in items:
        assert columns(item) == columns(rows[item.pk])


def test_fenced_change__lost_lease_leaves_item_as_it_was():
    """An item whose lease is gone is not changed in memory either."""
    [item] = _leased_with_history(1)
    Inventory.queue_items().update(status=Status.ABANDONED)
    before = columns(item)
    assert mark_error([item], ValueError("late")) == []
    assert columns(item) == before


def test_change__column_values_read_before_any_is_written():
    """A column that takes another's value takes the value it held before the change, as SQL's SET does."""
    [item] = _leased_with_history(1)
    swap = Change("swap", (("error_type", Column("error_message")), ("error_message", Column("error_type"))))
    item.__dict__.update(error_type="a", error_message="b")
    swap.apply([item], [item.pk])
    assert (item.error_type, item.error_message) == ("b", "a")


def _leased_with_history(n: int = 2):
    """Leased items whose rows had an earlier processed version and an error, so every column has a value."""
    messages = InventoryFactory.build_batch(n)
    enqueue_many(messages)
    mark_processed(lease(Inventory, n))
    enqueue_many([m.model_copy(update={"quantity": 2}) for m in messages])
    return lease(Inventory, n)
