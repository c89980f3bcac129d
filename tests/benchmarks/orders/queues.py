"""An order as a shop's export gives it: nested, constrained, with decimals, a time and lists."""

from decimal import Decimal

from pydantic import AwareDatetime, BaseModel, Field

from nexus_queues import QueueMessageWithId


class Address(BaseModel):
    street: str
    city: str
    postcode: str
    country: str = Field(pattern=r"^[A-Z]{2}$")


class Line(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    price: Decimal = Field(max_digits=12, decimal_places=2)


class OrderPlaced(QueueMessageWithId, queue="bench_orders", idempotent=True, category="Benchmarks"):
    """An order placed: the same order sent again unchanged is stored once."""

    order_id: str
    customer: str
    address: Address
    lines: list[Line] = Field(min_length=1)
    total: Decimal = Field(max_digits=14, decimal_places=2)
    placed_at: AwareDatetime
    tags: list[str]

    @property
    def message_id(self) -> str:
        return self.order_id
