"""The demo catalogue: products with prices valid for windows of time, as an Arrow table built without Spark.

Every value is a hash of the seed and the product's position, so a product is the same whatever the
number of products, and the same arguments give the same rows. Dates are whole days and hours from the
reference day's midnight (UTC), never from the clock: a file made twice that day is the same file.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc

CURRENCY = "EUR"
FUTURE_SHARE = 10
"""About one product in this many has a price starting after the reference day."""
OLD_SHARE = 3
"""About one product in this many has an expired price before its current one."""

TIMESTAMP = pa.timestamp("us", tz="UTC")
PRICE = pa.struct(
    [
        ("currency", pa.string()),
        ("amount", pa.decimal128(12, 2)),
        ("valid_from", TIMESTAMP),
        ("valid_to", TIMESTAMP),
    ]
)
SCHEMA = pa.schema(
    [("sku", pa.string()), ("name", pa.string()), ("prices", pa.list_(PRICE)), ("process_at", TIMESTAMP)]
)

_MASK = 2**64 - 1
_GOLDEN = 0x9E3779B97F4A7C15
_HOUR_US = 3600 * 1_000_000
_DAY_US = 24 * _HOUR_US


@dataclass(frozen=True)
class Catalogue:
    """The products' table and what it holds: how many products were changed and how many are scheduled."""

    table: pa.Table
    changed: int
    scheduled: int


def build_catalogue(products: int, *, seed: int, today: date, change: float = 0.0) -> Catalogue:
    """``products`` products, their prices dated from ``today``; ``change`` percent of them changed.

    A product has a current price, sometimes an expired one before it and sometimes one starting on
    a later day; ``process_at`` is when that later price starts (null when there is none). A changed
    product has a new name (even ones) or a current price one euro dearer (odd ones), nothing else.
    """
    draw = _Draws(products, seed)
    midnight = int(datetime.combine(today, time(), UTC).timestamp()) * 1_000_000
    has_old = pc.equal(draw("old", OLD_SHARE), 0)
    has_future = pc.equal(draw("future", FUTURE_SHARE), 0)
    current_from = _timestamps(midnight, days=pc.negate(pc.add(draw("age", 365), 1)))
    future_from = _timestamps(midnight, days=pc.add(draw("wait", 30), 1), hours=draw("hour", 24))
    changed = round(products * change / 100)
    renamed, repriced = _changes(products, changed)
    current_cents = pc.add(_cents(draw("price", 99_900)), pc.if_else(repriced, 100, 0))
    old = _prices(pc.add(current_cents, pc.add(draw("discount", 5_000), 100)), None, current_from)
    current = _prices(current_cents, _when(has_old, current_from), _when(has_future, future_from))
    future = _prices(_cents(draw("future price", 99_900)), future_from, None)
    number = pc.cast(draw.numbers(), pa.string())
    name = pc.binary_join_element_wise("Product ", number, "")
    columns = {
        "sku": pc.binary_join_element_wise("SKU-", pc.utf8_lpad(number, 7, "0"), ""),
        "name": pc.if_else(renamed, pc.binary_join_element_wise(name, " (renamed)", ""), name),
        "prices": _interleave([(has_old, old), (pa.repeat(True, products), current), (has_future, future)], products),
        "process_at": _when(has_future, future_from),
    }
    table = pa.table(list(columns.values()), schema=SCHEMA)
    return Catalogue(table, changed=changed, scheduled=pc.sum(has_future).as_py() or 0)


class _Draws:
    """Per product, a number below a bound drawn from the seed, the product's position and a name."""

    def __init__(self, products: int, seed: int) -> None:
        self.positions = pc.cast(_count_up(products), pa.uint64())
        self.seed = seed

    def numbers(self) -> pa.Array:
        """Each product's number, from 1."""
        return pc.cast(pc.add(self.positions, 1), pa.int64())

    def __call__(self, name: str, below: int) -> pa.Array:
        key = _mix_int((self.seed * _GOLDEN + int.from_bytes(name.encode(), "little")) & _MASK)
        hashed = _mix(pc.add(pc.multiply(self.positions, _u64(_GOLDEN)), _u64(key)))
        # The top 32 bits times the bound, shifted back: a number below the bound without a modulo.
        reduced = pc.shift_right(pc.multiply(pc.shift_right(hashed, _u64(32)), _u64(below)), _u64(32))
        return pc.cast(reduced, pa.int64())


def _mix(x: pa.Array) -> pa.Array:
    """splitmix64's finaliser, element-wise (uint64 products wrap around, as they must here)."""
    x = pc.multiply(pc.bit_wise_xor(x, pc.shift_right(x, _u64(30))), _u64(0xBF58476D1CE4E5B9))
    x = pc.multiply(pc.bit_wise_xor(x, pc.shift_right(x, _u64(27))), _u64(0x94D049BB133111EB))
    return pc.bit_wise_xor(x, pc.shift_right(x, _u64(31)))


def _u64(value: int) -> pa.Scalar:
    return pa.scalar(value, pa.uint64())


def _mix_int(x: int) -> int:
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _timestamps(midnight: int, *, days: pa.Array, hours: pa.Array | int = 0) -> pa.Array:
    """``midnight`` (microseconds since the epoch) moved by whole days and hours."""
    micros = pc.add(pc.add(pc.multiply(days, _DAY_US), pc.multiply(hours, _HOUR_US)), midnight)
    return pc.cast(micros, TIMESTAMP)


def _cents(values: pa.Array) -> pa.Array:
    """Amounts from 1.00 to 999.99, in cents."""
    return pc.add(values, 100)


def _when(condition: pa.Array, values: pa.Array) -> pa.Array:
    return pc.if_else(condition, values, pa.scalar(None, values.type))


def _prices(cents: pa.Array, valid_from: pa.Array | None, valid_to: pa.Array | None) -> pa.StructArray:
    """One price per product: an amount in cents becomes decimal128(12, 2); None is an open end."""
    amount = pc.multiply(pc.cast(cents, pa.decimal128(19, 0)), pa.scalar(Decimal("0.01"), pa.decimal128(3, 2)))
    nulls = pa.nulls(len(cents), TIMESTAMP)
    return pa.StructArray.from_arrays(
        [pa.repeat(CURRENCY, len(cents)), pc.cast(amount, PRICE.field("amount").type),
         nulls if valid_from is None else valid_from, nulls if valid_to is None else valid_to],
        fields=list(PRICE),
    )


def _interleave(slots: list[tuple[pa.Array, pa.StructArray]], products: int) -> pa.ListArray:
    """Each product's prices in slot order, keeping the slots whose condition holds for it."""
    width = len(slots)
    position = _count_up(products * width)
    product = pc.divide(position, width)
    slot = pc.subtract(position, pc.multiply(product, width))
    order = pc.add(pc.multiply(slot, products), product)
    kept = pc.take(pa.concat_arrays([condition for condition, _ in slots]), order)
    values = pc.filter(pc.take(pa.concat_arrays([prices for _, prices in slots]), order), kept)
    counts = reduce(pc.add, [pc.cast(condition, pa.int32()) for condition, _ in slots])
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(counts)])
    return pa.ListArray.from_arrays(offsets, values, type=SCHEMA.field("prices").type)


def _count_up(length: int) -> pa.Array:
    """0, 1, 2, ... as int64: many times faster than converting a Python range."""
    return pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), length)), 1)


def _changes(products: int, count: int) -> tuple[pa.Array, pa.Array]:
    """Which products get a new name and which a new price: ``count`` of them, spread evenly."""
    renamed, repriced = [False] * products, [False] * products
    for n in range(count):
        (renamed if n % 2 == 0 else repriced)[n * products // count] = True
    return pa.array(renamed), pa.array(repriced)
