"""The row factories give rows in the state their status names, as the worker and housekeeping would read it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import Status
from nexus_queues.leasing import abandon_expired
from tests.factories import (
    AbandonedFactory,
    ErrorFactory,
    ItemFactory,
    LeasedFactory,
    PendingFactory,
    ProcessedFactory,
    ProductFactory,
    SleepingFactory,
)
from tests.testapp.queues import Audit, Greeting, Product

pytestmark = pytest.mark.django_db


def test_item_factory__rows_in_each_status_of_any_queue():
    """Each factory stores one row of the queue it is given, in its status."""
    made = [
        PendingFactory.create(queue=Audit), LeasedFactory.create(queue=Greeting),
        SleepingFactory.create(queue=Greeting), ProcessedFactory.create(queue=Product),
        ErrorFactory.create(queue=Greeting), AbandonedFactory.create(queue=Greeting),
        ItemFactory.for_queue(Greeting, status="Custom"),
    ]
    assert [row.status for row in made] == [
        Status.PENDING, Status.LEASED, Status.SLEEPING, Status.PROCESSED, Status.ERROR, Status.ABANDONED, "Custom",
    ]
    assert [type(row) for row in made[:4]] == [
        Audit.queue_model, Greeting.queue_model, Greeting.queue_model, Product.queue_model,
    ]


def test_item_factory__pending_rows_are_what_a_worker_leases():
    """A Pending row is pending; the others are not."""
    pending = PendingFactory.create(queue=Greeting)
    LeasedFactory.create(queue=Greeting)
    SleepingFactory.create(queue=Greeting)
    assert list(Greeting.queue_items().pending()) == [pending]


def test_leased_factory__its_lease_expires_as_housekeeping_sees_it():
    """A Leased row is held until its lease expires, then housekeeping abandons it."""
    row = LeasedFactory.create(queue=Greeting)
    assert row.correlation_id and row.lease_expires_at > timezone.now()
    assert abandon_expired(Greeting, timezone.now()) == 0
    assert abandon_expired(Greeting, row.lease_expires_at + timedelta(seconds=1)) == 1


def test_processed_factory__keeps_its_message_as_the_previous_version():
    """A Processed row holds its message as previous_message, with the time it was processed."""
    row = ProcessedFactory.create(queue=Product, message=ProductFactory(sku="A", name="chair"))
    assert (row.previous_message.sku, row.previous_message.name) == ("A", "chair")
    assert row.processed_at is not None
    assert ProcessedFactory.create(queue=Greeting).previous_message is None  # no identity: no previous version


def test_error_factory__holds_the_exception():
    """An Error row names its exception's type and message."""
    row = ErrorFactory.create(queue=Greeting, error_message="boom")
    assert (row.error_type, row.error_message, row.attempts) == ("builtins.ValueError", "boom", 1)
