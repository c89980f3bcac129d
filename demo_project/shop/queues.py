"""The demo shop's queues."""

from decimal import Decimal

from nexus_queues import BatchResult, QueueMessage, QueueMessageWithId

from .prices import Price


class SendOrderConfirmation(QueueMessage, queue="send_order_confirmation", category="Orders"):
    """Email the customer that their order was received."""

    order_id: str
    email: str


class ProductUpdated(QueueMessageWithId, queue="product_updates", idempotent=True, category="Catalog"):
    """A product's catalog data and prices; the same product sent twice unchanged is processed once."""

    sku: str
    name: str
    prices: list[Price]

    @property
    def message_id(self) -> str:
        return self.sku

    @classmethod
    def get_example_message(cls) -> "ProductUpdated":
        return cls(sku="SKU-1", name="Example product", prices=[Price(currency="EUR", amount=Decimal("9.95"))])


class ExportPrices(QueueMessage, queue="export_prices", keep_processed_for=None, category="Catalog"):
    """Export the price list once a catalogue sync's products are all processed: a batch's completion."""

    currency: str = "EUR"
    batch: BatchResult | None = None
