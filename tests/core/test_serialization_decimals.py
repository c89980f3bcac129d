"""Decimals in canonical JSON: one text per value, at any scale, through enqueue and through a Spark sync's stager."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from nexus_queues.contrib.spark.rows import RowStager
from nexus_queues.enqueueing import enqueue_row, resolve_placement
from nexus_queues.serialization import canonical_decimal, canonical_json, json_hash
from tests.testapp.queues import Product

NOW = datetime(2030, 1, 1, tzinfo=UTC)


class Priced(BaseModel):
    """Decimals in every place a message holds one: plain, constrained, in a list, a map, a set, optional."""

    plain: Decimal
    money: Annotated[Decimal, Field(max_digits=30, decimal_places=12)]
    several: list[Decimal]
    keyed: dict[str, Decimal]
    distinct: frozenset[Decimal]
    optional: Decimal | None = None


@st.composite
def equal_decimals(draw: st.DrawFn, max_digits: int = 20, max_exponent: int = 30) -> tuple[Decimal, Decimal]:
    """Two Decimals equal in value, written at different scales (trailing zeros, exponents, -0)."""
    digits = tuple(int(d) for d in str(draw(st.integers(0, 10**max_digits))))
    exponent = draw(st.integers(-max_exponent, max_exponent))
    sign = draw(st.integers(0, 1))
    other_sign = draw(st.integers(0, 1)) if not any(digits) else sign  # -0 equals 0
    a_zeros, b_zeros = draw(st.integers(0, 12)), draw(st.integers(0, 12))
    a = Decimal((sign, digits + (0,) * a_zeros, exponent - a_zeros))
    b = Decimal((other_sign, digits + (0,) * b_zeros, exponent - b_zeros))
    assert a == b
    return a, b


@st.composite
def equal_money(draw: st.DrawFn) -> tuple[Decimal, Decimal]:
    """Two Decimals equal in value that fit max_digits=30, decimal_places=12 at both their scales."""
    value = Decimal(draw(st.integers(-(10**15), 10**15))).scaleb(-draw(st.integers(0, 6)))
    places = [-value.as_tuple().exponent + draw(st.integers(0, 6)) for _ in "ab"]  # type: ignore[operator]
    a, b = (value.quantize(Decimal(1).scaleb(-p)) for p in places)
    return a, b


def product(amount: Decimal) -> Product:
    return Product(sku="SKU-1", name="Kettle", prices=[{"currency": "EUR", "amount": amount}])


@given(equal_decimals())
def test_canonical_json__equal_decimals_give_equal_text_through_enqueue(pair: tuple[Decimal, Decimal]) -> None:
    """Value-equal Decimals at any scale give enqueue the same JSON bytes and hash, which validates back equal."""
    a, b = (enqueue_row(product(d), resolve_placement(None, None, None, None, None), NOW) for d in pair)

    assert (a.message.encode(), a.message_hash) == (b.message.encode(), b.message_hash)
    assert a.message_hash == json_hash(a.message)
    assert Product.model_validate_json(a.message) == product(pair[0])


@given(equal_decimals(max_digits=10, max_exponent=8), equal_decimals(max_digits=10, max_exponent=8), equal_money())
def test_canonical_json__equal_decimals_give_equal_text_in_every_place(
    first: tuple[Decimal, Decimal], second: tuple[Decimal, Decimal], money: tuple[Decimal, Decimal]
) -> None:
    """In lists, maps, sets and constrained fields alike; the text validates back to an equal model."""

    def priced(x: Decimal, y: Decimal, m: Decimal) -> Priced:
        return Priced(
            plain=x,
            money=m,
            several=[x, y],
            keyed={"k": y},
            distinct=frozenset([x, y]),
            optional=y,
        )

    a, b = priced(first[0], second[0], money[0]), priced(first[1], second[1], money[1])

    assert canonical_json(a) == canonical_json(b)
    assert Priced.model_validate_json(canonical_json(a)) == a


@given(st.integers(-(10**12), 10**12), st.integers(0, 6), st.integers(0, 12), st.integers(0, 12))
def test_canonical_json__equal_decimals_give_equal_text_through_a_sync(
    unscaled: int, places: int, more_a: int, more_b: int
) -> None:
    """A decimal column at any scale stages the JSON and hash that enqueue stores for the value."""
    value = Decimal(unscaled).scaleb(-places)
    stager = RowStager(Product, token=1, partition=0, now=NOW)

    def staged(scale: int) -> tuple[str, str]:
        prices = pa.array(
            [[{"currency": "EUR", "amount": value}]],
            pa.list_(pa.struct([("currency", pa.string()), ("amount", pa.decimal128(38, scale))])),
        )
        batch = pa.RecordBatch.from_arrays(
            [pa.array(["SKU-1"]), pa.array(["Kettle"]), prices], ["sku", "name", "prices"]
        )
        row = stager.rows(batch)[0]
        return row.message, row.message_hash

    enqueued = enqueue_row(product(value), resolve_placement(None, None, None, None, None), NOW)
    assert staged(places + more_a) == staged(places + more_b) == (enqueued.message, enqueued.message_hash)


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("24.90", "24.9"),
        ("2.49E+1", "24.9"),
        ("1E+2", "100"),
        ("100", "100"),
        ("0.000", "0"),
        ("-0", "0"),
        ("-0.0010", "-0.001"),
        ("1E-7", "0.0000001"),
        ("1E+100", "1E+100"),
        ("1.50E-100", "1.5E-100"),
        ("NaN", "NaN"),
    ],
)
def test_canonical_decimal__one_text_per_value(written: str, canonical: str) -> None:
    """No trailing zeros, no exponent until forty zeros would be written out, zero without a sign."""
    assert canonical_decimal(Decimal(written)) == canonical
