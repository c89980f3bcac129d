"""The demo shop's queue jobs: ``python manage.py nexus_worker`` runs them."""

import logging

from nexus_queues import QueueJob, previous_message

from .queues import ProductUpdated, SendOrderConfirmation

logger = logging.getLogger(__name__)


class SendOrderConfirmationJob(QueueJob):
    """Pretends to email the customer."""

    message_class = SendOrderConfirmation
    batch_size = 50

    def process(self, message: SendOrderConfirmation) -> None:
        logger.info("Order %s confirmed to %s.", message.order_id, message.email)


class ProductUpdatedJob(QueueJob):
    """Logs what changed since the product was last processed."""

    message_class = ProductUpdated

    def process(self, message: ProductUpdated) -> None:
        before = previous_message()
        change = "new" if before is None else f"was {before.name!r}"
        logger.info("Product %s is %r (%s).", message.sku, message.name, change)
