"""Stored values as Spark's Python values: what fits is typed, what does not is null at the nearest nullable level."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from nexus_queues.contrib.spark.schema import JSON
from nexus_queues.contrib.spark.values import column_converter
from nexus_queues.exceptions import InvalidArgument


def convert(data_type: object, value: object, metadata: dict[str, bool] | None = None) -> object:
    return column_converter(StructField("c", data_type, True, metadata))(value)  # type: ignore[arg-type]


def test_column_converter__decimals() -> None:
    """Decimals from their JSON text or numbers, rounded half up to the scale (as Spark's from_json and casts round);
    too many digits read as null."""
    cents = DecimalType(10, 2)

    assert convert(cents, "7.95") == Decimal("7.95")
    assert convert(cents, 3) == Decimal("3.00")
    assert (convert(cents, "1.005"), convert(cents, "-1.005"), convert(cents, "1.0049")) == (
        Decimal("1.01"), Decimal("-1.01"), Decimal("1.00")
    )
    assert convert(cents, "123456789.00") is None
    assert convert(DecimalType(38, 18), "12345678901234567890.123456789012345678") == Decimal(
        "12345678901234567890.123456789012345678"
    )
    assert [convert(cents, value) for value in ("abc", "NaN", True, [1])] == [None] * 4


def test_column_converter__whole_numbers() -> None:
    """Whole numbers within the type's range; a whole float counts, a bool or a fraction does not."""
    assert [convert(LongType(), value) for value in (5, 3.0, 2**63 - 1)] == [5, 3, 2**63 - 1]
    assert [convert(LongType(), value) for value in (2**63, True, 1.5, "5")] == [None] * 4
    assert convert(IntegerType(), 2**31) is None


def test_column_converter__scalars() -> None:
    """Floats, booleans and dates from their JSON; a value of another kind reads as null."""
    assert [convert(DoubleType(), value) for value in (1.5, 2, "2.25", Decimal("0.5"))] == [1.5, 2.0, 2.25, 0.5]
    assert [convert(DoubleType(), value) for value in ("x", False)] == [None, None]
    assert [convert(BooleanType(), value) for value in (True, 1)] == [True, None]
    assert convert(DateType(), "2026-03-02") == date(2026, 3, 2)
    assert convert(DateType(), datetime(2026, 3, 2, 10, tzinfo=UTC)) == date(2026, 3, 2)
    assert convert(DateType(), "soon") is None


def test_column_converter__timestamps_are_aware() -> None:
    """Times from ISO text or datetimes, aware; a naive one is taken as UTC."""
    plus_two = timezone(timedelta(hours=2))

    assert convert(TimestampType(), "2026-03-02T10:00:00Z") == datetime(2026, 3, 2, 10, tzinfo=UTC)
    assert convert(TimestampType(), "2026-03-02T10:00:00+02:00") == datetime(2026, 3, 2, 10, tzinfo=plus_two)
    assert convert(TimestampType(), datetime(2026, 3, 2, 10)) == datetime(2026, 3, 2, 10, tzinfo=UTC)
    assert [convert(TimestampType(), value) for value in ("later", 1700000000)] == [None, None]


def test_column_converter__text_and_json_text() -> None:
    """A string column keeps text as it is and writes anything else as JSON; a JSON column writes JSON always."""
    assert [convert(StringType(), value) for value in ("x", 5, {"b": 1, "a": [2]})] == ["x", "5", '{"a":[2],"b":1}']
    assert [convert(StringType(), value, JSON) for value in ("x", 5, None)] == ['"x"', "5", None]


def test_column_converter__nested() -> None:
    """Structs from objects by key, arrays from lists, maps from objects."""
    point = StructType([StructField("x", LongType(), True), StructField("label", StringType(), True)])

    assert convert(point, {"label": "a", "x": 1}) == (1, "a")
    assert convert(point, {"x": 1}) == (1, None)
    assert convert(ArrayType(point, False), [{"x": 1}, {"x": 2}]) == [(1, None), (2, None)]
    assert convert(MapType(StringType(), LongType(), False), {"a": 1}) == {"a": 1}


def test_column_converter__misfit_nulls_the_nearest_nullable_level() -> None:
    """A struct field that no longer fits is null alone; an element that does not fit nulls its whole array."""
    point = StructType([StructField("x", LongType(), True), StructField("label", StringType(), True)])

    assert convert(point, {"x": "one", "label": "a"}) == (None, "a")
    assert convert(ArrayType(LongType(), False), [1, "two"]) is None
    assert convert(ArrayType(LongType(), False), [1, None]) is None
    assert convert(ArrayType(LongType(), True), [1, "two"]) == [1, None]
    assert convert(MapType(StringType(), LongType(), False), {"a": "one"}) is None
    assert convert(point, ["not", "an", "object"]) is None


def test_column_converter__not_nullable_column_raises() -> None:
    """A value that does not fit a column that cannot be null fails the read, naming the column."""
    status = column_converter(StructField("status", LongType(), False))

    with pytest.raises(InvalidArgument, match="Column status is bigint"):
        status("Pending")
