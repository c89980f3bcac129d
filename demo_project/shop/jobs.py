"""The demo shop's queue jobs and a periodic job: ``python manage.py nexus_worker`` runs them."""

import logging
from datetime import datetime

from django.utils import timezone

from nexus_queues import QueueJob, periodic, previous_message
from nexus_queues.counting import count_up_to

from .prices import next_price_start, prices_at
from .queues import ExportPrices, ProductUpdated, SendOrderConfirmation

logger = logging.getLogger(__name__)


class SendOrderConfirmationJob(QueueJob):
    """Pretends to email the customer."""

    message_class = SendOrderConfirmation
    batch_size = 50

    def process(self, message: SendOrderConfirmation) -> None:
        logger.info("Order %s confirmed to %s.", message.order_id, message.email)


class ProductUpdatedJob(QueueJob):
    """Logs the product's price valid now and runs again when a later price starts."""

    message_class = ProductUpdated

    def process(self, message: ProductUpdated) -> datetime | None:
        now = timezone.now()
        before = previous_message()
        change = f"was {_described(before, now)}" if isinstance(before, ProductUpdated) else "new"
        logger.info("Product %s is %s (%s).", message.sku, _described(message, now), change)
        return next_price_start(message.prices, now)


class ExportPricesJob(QueueJob):
    """Pretends to export the price list, once the catalogue sync that enqueued it is processed."""

    message_class = ExportPrices

    def process(self, message: ExportPrices) -> None:
        sync = message.batch
        assert sync is not None, "enqueued by a batch's completion"
        logger.info("Exporting %s prices after %r: %s products processed, %s failed of %s.", message.currency,
                    sync.label, sync.processed, sync.error, sync.total)


@periodic("*/5 * * * *", category="Shop")
def log_backlog() -> None:
    """Every five minutes, logs how many messages wait in each of the shop's queues (counted up to 10,000)."""
    for message_class in (SendOrderConfirmation, ProductUpdated):
        waiting = count_up_to(message_class.queue_items().pending(), 10_000)
        logger.info("%s: %s Pending.", message_class.queue_name(), waiting)


def _described(product: ProductUpdated, moment: datetime) -> str:
    prices = ", ".join(f"{p.amount:.2f} {p.currency}" for p in prices_at(product.prices, moment)) or "no price"
    return f"{product.name!r} at {prices}"
