"""A product's prices, each valid for a window of time, and which of them holds at a moment."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal

from pydantic import BaseModel

from nexus_queues import UtcDatetime


class Price(BaseModel):
    """A price in a currency, valid from ``valid_from`` (inclusive) until ``valid_to`` (exclusive); None is open."""

    currency: str
    amount: Decimal
    # Aware times only: a naive one would be read in whatever time zone the reader happens to use.
    valid_from: UtcDatetime | None = None
    valid_to: UtcDatetime | None = None

    def is_valid_at(self, moment: datetime) -> bool:
        """Does the price hold at ``moment``?"""
        started = self.valid_from is None or self.valid_from <= moment
        return started and (self.valid_to is None or moment < self.valid_to)


def prices_at(prices: Iterable[Price], moment: datetime) -> list[Price]:
    """The prices that hold at ``moment``, in their order."""
    return [price for price in prices if price.is_valid_at(moment)]


def next_price_start(prices: Iterable[Price], moment: datetime) -> datetime | None:
    """When the earliest price starting after ``moment`` starts, or None when none does."""
    return min((p.valid_from for p in prices if p.valid_from is not None and p.valid_from > moment), default=None)
