"""The demo's prices: which holds at a moment, and when the next one starts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from pydantic import ValidationError

from demo_project.shop.prices import Price, next_price_start, prices_at
from nexus_queues.serialization import canonical_json

NOON = datetime(2026, 11, 23, 12, tzinfo=UTC)


def price(amount: str, valid_from: datetime | None = None, valid_to: datetime | None = None) -> Price:
    """A EUR price."""
    return Price(currency="EUR", amount=Decimal(amount), valid_from=valid_from, valid_to=valid_to)


def test_prices_at__start_included_end_excluded():
    """A price holds from its start (included) until its end (excluded); None leaves that side open."""
    tomorrow = NOON + timedelta(days=1)
    old, current, later = price("3", None, NOON), price("2", NOON, tomorrow), price("1", tomorrow)
    prices = [old, current, later]
    assert prices_at(prices, NOON - timedelta(microseconds=1)) == [old]
    assert prices_at(prices, NOON) == [current]
    assert prices_at(prices, tomorrow) == [later]
    assert prices_at([price("1", NOON, NOON)], NOON) == []


def test_next_price_start__the_earliest_start_after_the_moment():
    """The next start is the earliest one after the moment; a start at the moment itself is not next."""
    prices = [price("1", NOON), price("2", NOON + timedelta(days=3)), price("3", NOON + timedelta(hours=5))]
    assert next_price_start(prices, NOON) == NOON + timedelta(hours=5)
    assert next_price_start(prices, NOON - timedelta(days=1)) == NOON


def test_next_price_start__none_when_no_price_starts_later():
    """Prices that started already, or have no start, give None."""
    assert next_price_start([price("1"), price("2", NOON - timedelta(days=1), NOON)], NOON) is None
    assert next_price_start([], NOON) is None


def test_price__refuses_times_without_a_time_zone():
    """A naive valid_from or valid_to is a validation error: it would mean a different moment per reader."""
    with pytest.raises(ValidationError, match="timezone"):
        price("1", datetime(2026, 11, 23))
    with pytest.raises(ValidationError, match="timezone"):
        Price.model_validate({"currency": "EUR", "amount": "1", "valid_to": "2026-11-23T00:00:00"})


def test_price__keeps_times_in_utc():
    """A time given in another zone is kept as the same moment in UTC, so its message JSON is the same."""
    stockholm = Price.model_validate({"currency": "EUR", "amount": "1", "valid_from": "2026-11-23T13:00:00+01:00"})
    assert stockholm.valid_from == NOON and stockholm.valid_from.utcoffset() == timedelta(0)
    assert canonical_json(stockholm) == canonical_json(price("1", NOON))
