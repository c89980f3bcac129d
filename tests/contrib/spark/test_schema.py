"""Message classes as Spark schemas: each annotation's column type, without a Spark session."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from enum import Enum, IntEnum
from typing import Annotated, Any, Literal
from uuid import UUID

import pytest
from pydantic import AfterValidator, AwareDatetime, BaseModel, Field, NaiveDatetime, PastDate
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from nexus_queues.contrib.spark.reading import RowMaker
from nexus_queues.contrib.spark.schema import JSON, ROW_COLUMNS, spark_schema
from nexus_queues.exceptions import ConfigurationError
from tests.testapp.queues import Audit, Greeting, Product


class Colour(Enum):
    RED = "red"


class Size(IntEnum):
    SMALL = 1


class Mixed(Enum):
    ONE = 1
    TWO = "two"


class Point(BaseModel):
    x: int
    label: str | None = None


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


class Everything(BaseModel):
    text: str
    count: int
    ratio: float
    flag: bool
    price: Decimal
    cents: Decimal = Field(max_digits=10, decimal_places=2)
    places: Annotated[Decimal, Field(decimal_places=4)]
    digits: Decimal = Field(max_digits=6)
    at: datetime
    day: date
    uuid: UUID
    maybe: int | None = None
    tags: list[str]
    holes: list[int | None]
    unique: set[int]
    points: tuple[Point, ...]
    point: Point
    scores: dict[str, float]
    colour: Colour
    size: Size
    mixed: Mixed
    kind: Literal["a", "b"]
    anything: Any
    free: dict[str, Any]
    either: int | str
    untyped_list: list[Any]
    keyed_by_int: dict[int, str]
    tree: Tree
    aliased: int = Field(alias="Aliased")


def message_columns(model: type[BaseModel]) -> dict[str, StructField]:
    return {column.name: column for column in spark_schema(model).fields[len(ROW_COLUMNS):]}  # type: ignore[arg-type]


def test_spark_schema__row_columns_first() -> None:
    """The row's own columns come first with their types, then the message's fields in declaration order."""
    schema = spark_schema(Greeting)

    assert [(f.name, f.dataType, f.nullable) for f in schema.fields] == [
        ("id", LongType(), False),
        ("message_id", StringType(), True),
        ("status", StringType(), False),
        ("created_at", TimestampType(), False),
        ("updated_at", TimestampType(), False),
        ("process_at", TimestampType(), True),
        ("attempts", schema["attempts"].dataType, False),
        ("error_type", StringType(), False),
        ("error_message", StringType(), False),
        ("name", StringType(), True),
        ("times", LongType(), True),
    ]
    assert schema["attempts"].dataType.simpleString() == "int"


def test_spark_schema__scalars() -> None:
    """Text, whole numbers, floats, booleans, times, dates and UUIDs map to Spark's own types."""
    columns = message_columns(Everything)

    assert {name: columns[name].dataType for name in ("text", "count", "ratio", "flag", "at", "day", "uuid")} == {
        "text": StringType(), "count": LongType(), "ratio": DoubleType(), "flag": BooleanType(),
        "at": TimestampType(), "day": DateType(), "uuid": StringType(),
    }


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


class Window(BaseModel):
    opens: AwareDatetime
    closes: Annotated[AwareDatetime, AfterValidator(_utc)] | None = None
    local: NaiveDatetime | None = None
    born: PastDate | None = None


def test_spark_schema__pydantic_times() -> None:
    """Pydantic's own time types (AwareDatetime, PastDate...), optional or annotated too, are timestamps and dates."""
    columns = message_columns(Window)

    assert [columns[name].dataType for name in ("opens", "closes", "local", "born")] == [
        TimestampType(), TimestampType(), TimestampType(), DateType(),
    ]
    assert not any(columns[name].metadata for name in ("opens", "closes", "local", "born"))


def test_row_maker__optional_times_read_as_times() -> None:
    """An optional aware time stored as JSON text reads as a time, not as the text; a missing one as null."""
    maker = RowMaker(Window, StructType([columns for columns in spark_schema(Window).fields if columns.name in (
        "opens", "closes")]))

    row = maker.row((1, {"opens": "2026-03-02T10:00:00Z", "closes": "2026-03-02T12:30:00+02:00"}))

    assert row == (datetime(2026, 3, 2, 10, tzinfo=UTC), datetime(2026, 3, 2, 10, 30, tzinfo=UTC))
    assert maker.row((2, {"opens": "2026-03-02T10:00:00Z"}))[1] is None


def test_spark_schema__decimals() -> None:
    """A Decimal is decimal(38, 18) unless its constraints say otherwise."""
    columns = message_columns(Everything)

    assert [columns[name].dataType for name in ("price", "cents", "places", "digits")] == [
        DecimalType(38, 18), DecimalType(10, 2), DecimalType(38, 4), DecimalType(12, 6),
    ]


def test_spark_schema__containers() -> None:
    """Lists, sets and tuples are arrays, models structs, dict[str, X] maps; elements nullable when Optional."""
    columns = message_columns(Everything)
    point = StructType([StructField("x", LongType(), True), StructField("label", StringType(), True)])

    assert columns["tags"].dataType == ArrayType(StringType(), False)
    assert columns["holes"].dataType == ArrayType(LongType(), True)
    assert columns["unique"].dataType == ArrayType(LongType(), False)
    assert columns["points"].dataType == ArrayType(point, False)
    assert columns["point"].dataType == point
    assert columns["scores"].dataType == MapType(StringType(), DoubleType(), False)


def test_spark_schema__enums_and_literals() -> None:
    """Enums and Literals take their values' type; mixed values are JSON text."""
    columns = message_columns(Everything)

    assert [columns[name].dataType for name in ("colour", "size", "kind")] == [StringType(), LongType(), StringType()]
    assert (columns["mixed"].dataType, columns["mixed"].metadata) == (StringType(), JSON)


def test_spark_schema__json_text_for_the_rest() -> None:
    """Any, free-form dicts, unions, lists of Any and non-text keys are strings marked as JSON text."""
    columns = message_columns(Everything)

    for name in ("anything", "free", "either", "untyped_list", "keyed_by_int"):
        assert (columns[name].dataType, columns[name].metadata) == (StringType(), JSON), name
    assert columns["text"].metadata == {}


def test_spark_schema__recursive_model() -> None:
    """A model nested in itself is a struct once; deeper, JSON text."""
    tree = message_columns(Everything)["tree"].dataType

    assert tree == StructType(
        [StructField("name", StringType(), True), StructField("children", StringType(), True, JSON)]
    )


def test_spark_schema__message_columns_nullable_and_aliased() -> None:
    """Every message column is nullable (a stored message may lack it) and named by its JSON key."""
    columns = message_columns(Everything)

    assert all(column.nullable for column in columns.values())
    assert "Aliased" in columns
    assert "aliased" not in columns


def test_spark_schema__test_queues() -> None:
    """The test queues' fields: Product's nested prices and attributes, Audit's float and free details."""
    product, audit = message_columns(Product), message_columns(Audit)
    price = StructType([StructField("currency", StringType(), True), StructField("amount", DecimalType(38, 18), True)])

    assert product["prices"].dataType == ArrayType(price, False)
    assert product["attributes"].dataType == MapType(StringType(), StringType(), False)
    assert (audit["duration"].dataType, audit["details"].dataType, audit["details"].metadata) == (
        DoubleType(), StringType(), JSON,
    )


class Order(BaseModel):
    id: int
    status: str


def test_spark_schema__field_named_like_a_row_column() -> None:
    """A message field keeps its name; the row column it shadows is read as nexus_<name>."""
    names = spark_schema(Order).names  # type: ignore[arg-type]

    assert names == [
        "nexus_id", "message_id", "nexus_status", "created_at", "updated_at", "process_at", "attempts", "error_type",
        "error_message", "id", "status",
    ]


class Clash(BaseModel):
    status: str
    nexus_status: str


def test_spark_schema__clash_with_a_prefixed_row_column() -> None:
    """A field named like the prefixed row column too cannot be read: the error names it."""
    with pytest.raises(ConfigurationError, match="nexus_status"):
        spark_schema(Clash)  # type: ignore[arg-type]
