"""Queues the test suite works on, one per kind of queue option."""

from datetime import timedelta
from decimal import Decimal
from typing import Any

from pydantic import BaseModel

from nexus_queues import BatchResult, QueueMessage, QueueMessageWithId


class Greeting(QueueMessage, queue="greetings", category="Tests"):
    """A plain queue: no identity, processed messages are deleted."""

    name: str
    times: int = 1


class Price(BaseModel):
    currency: str
    amount: Decimal


class Product(QueueMessageWithId, queue="products", idempotent=True):
    """Identity and idempotency: the same product twice is stored once."""

    sku: str
    name: str
    prices: list[Price] = []
    attributes: dict[str, str] = {}

    @property
    def message_id(self) -> str:
        return self.sku


class Inventory(QueueMessageWithId, queue="inventory", keep_processed_for=timedelta(days=1)):
    """Identity without idempotency; processed messages kept for a day."""

    sku: str
    quantity: int

    @property
    def message_id(self) -> str:
        return self.sku


class Audit(
    QueueMessage, queue="audits", default_status="OnHold", keep_processed_for=None, verbose_name="Audit trail"
):
    """Starts OnHold; keeps processed messages forever; its own verbose name. A typed float and free-form details."""

    event: str
    duration: float = 0.0
    details: dict[str, Any] = {}


class Shipment(QueueMessageWithId, queue="shipments", category="RabbitMQ"):
    """Published to RabbitMQ by the outbox job, after ``delay_seconds`` in the broker."""

    order_id: str
    delay_seconds: int = 0

    @property
    def message_id(self) -> str:
        return self.order_id


class Arrival(QueueMessageWithId, queue="arrivals", idempotent=True, category="RabbitMQ"):
    """Consumed from an AMQP queue: with identity, a redelivery is discarded instead of stored twice."""

    arrival_id: str
    n: int

    @property
    def message_id(self) -> str:
        return self.arrival_id


class Digest(QueueMessage, queue="digests", category="Scheduled"):
    """Drained by a job with a schedule, not as soon as it is enqueued."""

    text: str


class BatchReport(QueueMessage, queue="batch_reports", keep_processed_for=None, category="Batches"):
    """A batch's completion message: its job reports the counts it was given; kept, to be counted."""

    note: str = ""
    batch: BatchResult | None = None
