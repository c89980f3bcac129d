"""factory-boy factories: the test queues' messages, and queue rows in each status.

A row factory stores its message the way ``enqueue`` does, then sets the columns of its status as the
worker leaves them, so a test starts from that state without walking enqueue, lease and update:
``LeasedFactory.create(queue=Greeting)``, ``ErrorFactory.create(queue=Product, message=ProductFactory(sku="A"))``.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import factory
from django.db.models import F
from django.utils import timezone

from nexus_queues import QueueMessage, Status, enqueue
from nexus_queues.models import QueueItem
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Audit, Greeting, Inventory, Price, Product


class GreetingFactory(factory.Factory):
    class Meta:
        model = Greeting

    name = factory.Sequence(lambda n: f"person-{n}")


class PriceFactory(factory.Factory):
    class Meta:
        model = Price

    currency = "EUR"
    amount = Decimal("9.95")


class ProductFactory(factory.Factory):
    class Meta:
        model = Product

    sku = factory.Sequence(lambda n: f"SKU-{n}")
    name = factory.Faker("word")
    prices = factory.List([factory.SubFactory(PriceFactory)])


class InventoryFactory(factory.Factory):
    class Meta:
        model = Inventory

    sku = factory.Sequence(lambda n: f"SKU-{n}")
    quantity = 1


class AuditFactory(factory.Factory):
    class Meta:
        model = Audit

    event = "login"


class PingFactory(factory.Factory):
    class Meta:
        model = Ping

    n = factory.Sequence(int)


MESSAGE_FACTORIES: dict[type[QueueMessage], type[factory.Factory]] = {
    Greeting: GreetingFactory, Product: ProductFactory, Inventory: InventoryFactory, Audit: AuditFactory,
    Ping: PingFactory,
}
"""The message factory of each test queue, for a row factory given only its ``queue``."""


class ItemFactory(factory.Factory):
    """A Pending row of ``queue`` (a message class; Greeting by default) holding ``message``."""

    class Meta:
        model = QueueItem

    queue: Any = Greeting
    message = factory.LazyAttribute(lambda row: MESSAGE_FACTORIES[row.queue]())
    status = Status.PENDING

    @classmethod
    def _build(cls, model_class: type, *args: Any, **kwargs: Any) -> QueueItem:
        raise TypeError("Queue rows exist only in their table: use create().")

    @classmethod
    def _create(cls, model_class: type, *args: Any, queue: type[QueueMessage], message: QueueMessage,
                **columns: Any) -> QueueItem:
        (row_id,) = enqueue(message, return_ids=True).ids or ()
        rows = queue.queue_items().filter(pk=row_id)
        rows.update(updated_at=timezone.now(), **columns)
        return rows.get()

    @classmethod
    def for_queue(cls, queue: type[QueueMessage], **overrides: Any) -> QueueItem:
        """One row of ``queue``: ``ItemFactory.for_queue(Greeting, status=Status.ERROR)``."""
        return cls.create(queue=queue, **overrides)


class PendingFactory(ItemFactory):
    """A Pending row, never leased."""


class LeasedFactory(ItemFactory):
    """A Leased row: held by a run (its correlation id) until its lease expires in five minutes."""

    status = Status.LEASED
    correlation_id = factory.LazyFunction(lambda: uuid.uuid4().hex)
    lease_expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=5))
    attempts = 1


class SleepingFactory(ItemFactory):
    """A Sleeping row, due in an hour."""

    status = Status.SLEEPING
    process_at = factory.LazyFunction(lambda: timezone.now() + timedelta(hours=1))


class ProcessedFactory(ItemFactory):
    """A Processed row, kept as its own previous version in a queue with identity."""

    status = Status.PROCESSED
    correlation_id = factory.LazyFunction(lambda: uuid.uuid4().hex)
    previous_message = factory.LazyAttribute(lambda row: F("message") if row.queue.has_identity else None)
    processed_at = factory.LazyFunction(timezone.now)
    attempts = 1


class ErrorFactory(ItemFactory):
    """An Error row with the exception its job raised."""

    status = Status.ERROR
    correlation_id = factory.LazyFunction(lambda: uuid.uuid4().hex)
    error_type = "builtins.ValueError"
    error_message = "cannot process"
    error_traceback = 'Traceback (most recent call last):\nValueError: cannot process\n'
    attempts = 1


class AbandonedFactory(ItemFactory):
    """An Abandoned row: its run's lease expired five minutes ago."""

    status = Status.ABANDONED
    correlation_id = factory.LazyFunction(lambda: uuid.uuid4().hex)
    lease_expires_at = factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=5))
    attempts = 1
