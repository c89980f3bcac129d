"""Queues the test suite works on, one per kind of queue option."""

from datetime import date, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, Field

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


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Line(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    price: Decimal = Field(max_digits=12, decimal_places=2)
    note: str | None = None


class Place(BaseModel):
    country: str = Field(pattern=r"^[A-Z]{2}$")
    city: str | None = None


class Specimen(QueueMessageWithId, queue="specimens", category="Spark"):
    """A field of each type a read gives a Spark type of its own (the two readers of a queue compare on it)."""

    key: str
    count: int
    ratio: float
    flag: bool
    price: Decimal = Field(max_digits=12, decimal_places=2)
    amount: Decimal
    taken_at: AwareDatetime
    day: date
    ref: UUID
    colour: Colour
    level: Literal[1, 2, 3]
    place: Place
    lines: list[Line] = []
    tags: list[str] = []
    scores: dict[str, int] = {}
    note: str | None = None
    limit: int = 10

    @property
    def message_id(self) -> str:
        return self.key
