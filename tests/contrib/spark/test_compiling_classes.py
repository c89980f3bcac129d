"""Which message classes and columns compile into Spark SQL, and why the others take the Python path: each reason
names the field or column. Built from Spark types alone: no Spark session, no py4j call."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest
from pydantic import AwareDatetime, BaseModel, Field
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from nexus_queues import QueueMessage, QueueMessageWithId, UtcDatetime
from nexus_queues.contrib.spark.compiling import STAGED_COLUMNS, NotCompilable, staged_columns
from nexus_queues.contrib.spark.compiling_patterns import java_pattern
from tests.testapp.queues import Product, Specimen


class Coded(QueueMessage, abstract=True):
    code: str = Field(pattern=r"(?i)^ab$")


class Counted(QueueMessage, abstract=True):
    count: int


class Timed(QueueMessage, abstract=True):
    at: AwareDatetime


class InUtc(QueueMessage, abstract=True):
    at: UtcDatetime


class Joined(QueueMessageWithId, abstract=True):
    a: str
    b: str

    @property
    def message_id(self) -> str:
        return f"{self.a}-{self.b}"


class Line(BaseModel):
    sku: str
    quantity: int = Field(ge=1)


class Order(QueueMessageWithId, abstract=True):
    order_id: str
    lines: list[Line]

    @property
    def message_id(self) -> str:
        return self.order_id


def schema(**columns: DataType) -> StructType:
    return StructType([StructField(name, data_type) for name, data_type in columns.items()])


TEXT, TIME = StringType(), TimestampType()


@pytest.mark.parametrize(
    ("message_class", "columns", "reason"),
    [
        (Specimen, schema(key=TEXT, ratio=DoubleType()), "field ratio: a float field (Java writes floats otherwise"),
        (Product, schema(sku=TEXT, attributes=MapType(TEXT, TEXT)), "field attributes: a dict field"),
        (Coded, schema(code=TEXT), "field code: pattern '(?i)^ab$' may not mean in Java what it means in Rust"),
        (Counted, schema(count=TEXT), "field count: an int from a string column"),
        (Counted, schema(count=LongType(), process_at=TIME), "column process_at: a placement column"),
        (Timed, schema(at=TimestampNTZType()), "field at: a datetime from a timestamp_ntz column"),
        (Joined, schema(a=TEXT, b=TEXT), "Joined.message_id: not one of its fields as it is"),
        (
            Order,
            schema(order_id=TEXT, lines=ArrayType(schema(sku=TEXT, quantity=TEXT))),
            "field lines.[].quantity: an int from a string column",
        ),
    ],
)
def test_staged_columns__not_compilable_names_the_field(message_class: Any, columns: StructType, reason: str) -> None:
    """A class or a column outside the supported set raises NotCompilable naming the field or column."""
    with pytest.raises(NotCompilable) as raised:
        staged_columns(message_class, columns)
    assert str(raised.value).startswith(reason), str(raised.value)


def test_staged_columns__aware_times_need_a_utc_session_unless_kept_in_utc() -> None:
    """Python is handed times in the session's zone and writes their offset: an AwareDatetime compiles only in a
    UTC session; a UtcDatetime, written in UTC whatever zone it came in, in any."""
    with pytest.raises(NotCompilable, match="field at: a datetime Python would write in the session's time zone"):
        staged_columns(Timed, schema(at=TIME), time_zone="Asia/Kathmandu")
    assert staged_columns(Timed, schema(at=TIME), time_zone="UTC")
    assert staged_columns(InUtc, schema(at=TIME), time_zone="Asia/Kathmandu")


def test_staged_columns__built_without_spark_in_milliseconds() -> None:
    """The expressions of a nested class are text made in Python: no py4j call, well under a second."""
    started = time.perf_counter()
    columns = staged_columns(Order, schema(order_id=TEXT, lines=ArrayType(schema(sku=TEXT, quantity=IntegerType()))))
    assert time.perf_counter() - started < 0.5
    assert tuple(columns) == STAGED_COLUMNS


@pytest.mark.parametrize(
    ("pattern", "java"),
    [
        (r"^[A-Z]{2}$", r"^[A-Z]{2}\z"),  # Java's $ would match before a final newline too
        (r"a.b", r"a[^\n]b"),
        (r"^\d+(?:-\d+)*$", r"^\p{Nd}+(?:-\p{Nd}+)*\z"),
        (r"[^a-z0-9_-]", r"[^a-z0-9_\-]"),
        (r"x|y+?", r"x|y+?"),
        (r"(?i)x", None),
        (r"\bword", None),
        (r"[[:alpha:]]", None),
        (r"a{2,1}", None),
        (r"a**", None),
        (r"x{", None),
        (r"(a", None),
    ],
)
def test_java_pattern__same_meaning_or_none(pattern: str, java: str | None) -> None:
    """A pattern translates to the Java regex that searches alike, or to None when the two may differ."""
    assert java_pattern(pattern) == java


def test_staged_columns__a_time_field_compiles_from_timestamps_only() -> None:
    """A datetime field from a date column is not compiled (pydantic would turn the date into midnight)."""
    with pytest.raises(NotCompilable, match="field at: a datetime from a date column"):
        staged_columns(Timed, schema(at=DateType()))
    assert datetime  # the module's import is for the annotations above
