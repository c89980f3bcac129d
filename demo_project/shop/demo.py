"""What ``manage.py nexus_demo`` does, step by step, as lines to print."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal

from nexus_queues import QueueMessage, enqueue, enqueue_many, lease, mark_error, mark_processed
from nexus_queues.models import Batch

from .prices import Price
from .queues import ExportPrices, ProductUpdated, SendOrderConfirmation


def run_demo() -> Iterator[str]:
    """Enqueue orders and products, then lease and process one batch of each queue."""
    orders = [SendOrderConfirmation(order_id=f"ORD-{n}", email=f"customer{n}@example.com") for n in range(1, 6)]
    enqueue_many(orders)
    enqueue(SendOrderConfirmation(order_id="ORD-LATER", email="later@example.com"), delay=timedelta(hours=1))
    yield f"Enqueued {len(orders)} order confirmations and 1 scheduled an hour from now."

    products = [
        ProductUpdated(
            sku=f"SKU-{n}", name=f"Product {n}", prices=[Price(currency="EUR", amount=Decimal(n) + Decimal("0.95"))]
        )
        for n in range(1, 4)
    ]
    first = enqueue_many(products, batch="catalogue sync", on_complete=ExportPrices(currency="EUR"))
    again = enqueue_many(products)
    yield (
        f"Enqueued {len(products)} products as batch {first.batch}: {len(first.stored)} stored; sent again "
        f"unchanged: {len(again.discarded)} discarded as idempotent duplicates."
    )

    yield from _process(SendOrderConfirmation, fail_on="ORD-3")
    yield from _process(ProductUpdated)
    sync = Batch.objects.get(pk=first.batch)
    export = ExportPrices.queue_items().get().message.batch
    yield (
        f"Batch {sync.pk} ({sync.label}) completed: {sync.processed} processed, {sync.error} failed of {sync.total}; "
        f"its export_prices message was enqueued once, given {export.processed} processed of {export.total}."
    )
    yield from _process(ExportPrices)
    changed = products[0].model_copy(update={"name": "Product 1 (renamed)"})
    enqueue(changed)
    yield f"Enqueued a new version of {changed.sku}; it is Pending again and remembers the processed version."
    for message_class in (SendOrderConfirmation, ProductUpdated):
        counts = Counter(message_class.queue_model.objects.values_list("status", flat=True))
        summary = ", ".join(f"{status}: {n}" for status, n in sorted(counts.items())) or "empty"
        yield f"{message_class.queue_name()}: {summary}"


def _process(message_class: type[QueueMessage], fail_on: str | None = None) -> Iterator[str]:
    items = lease(message_class, 10)
    failed = [item for item in items if fail_on and getattr(item.message, "order_id", None) == fail_on]
    if failed:
        mark_error(failed, RuntimeError(f"mail server refused {fail_on}"))
    mark_processed([item for item in items if item not in failed])
    run = items[0].correlation_id if items else "-"
    yield (
        f"Leased {len(items)} message(s) of {message_class.queue_name()} (correlation id {run}): "
        f"{len(items) - len(failed)} processed, {len(failed)} failed."
    )
