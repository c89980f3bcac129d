"""Example messages for the admin's enqueue form."""

from datetime import datetime
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel

from nexus_queues.admin.examples import example_message
from tests.testapp.queues import Audit, Greeting, Price, Product


def test_example__fields_at_defaults_or_empty_values():
    """Without a custom example, each field takes its default or an empty value of its type."""
    assert example_message(Greeting) == Greeting(name="", times=1)
    assert example_message(Product) == Product(sku="", name="", prices=[], attributes={})


def test_example__get_example_message_wins(monkeypatch):
    monkeypatch.setattr(Audit, "get_example_message", classmethod(lambda cls: cls(event="signup")), raising=False)
    assert example_message(Audit) == Audit(event="signup")


def example_factory(message_class):
    return message_class.model_validate({"event": "from factory"})


def test_example__factory_setting_wins_over_all(settings, monkeypatch):
    monkeypatch.setattr(Audit, "get_example_message", classmethod(lambda cls: cls(event="signup")), raising=False)
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "EXAMPLE_FACTORY": "tests.core.test_examples.example_factory"}
    assert example_message(Audit) == Audit(event="from factory")


class Order(BaseModel):
    price: Price
    kind: Literal["retail", "wholesale"]
    note: str | None
    placed: datetime
    lines: list[Price]


def test_example__nested_literal_optional_and_dates_filled():
    """Nested models are filled field by field; literals take their first value, optionals None."""
    order = example_message(Order)
    assert order.price == Price(currency="", amount=Decimal(0))
    assert (order.kind, order.note, order.lines) == ("retail", None, [])
    assert order.placed.tzinfo is not None
