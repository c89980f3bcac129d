"""The JVM path's staged rows are the Python path's, byte for byte: the same messages, hashes and ids for the rows
pydantic accepts, and the same fields named for the rows it refuses (a property over every type that compiles)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import Any, Literal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import AwareDatetime, BaseModel, Field
from pyspark.sql import DataFrame, SparkSession

from demo_project.shop.prices import Price as DemoPrice
from nexus_queues import QueueMessageWithId, UtcDatetime
from nexus_queues.contrib.spark.compiling import STAGED_COLUMNS, select_staged, staged_columns
from nexus_queues.contrib.spark.rows import RowStager
from nexus_queues.staging import StagedRow

pytestmark = pytest.mark.slow
NOW = datetime(2030, 1, 1, tzinfo=UTC)
WHOLE_STAGE = "spark.sql.codegen.wholeStage"


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Leaf(BaseModel):
    code: str = Field(pattern=r"^[A-Z]{2}$")
    quantity: int = Field(ge=1)
    price: Decimal = Field(max_digits=12, decimal_places=2)
    note: str | None = None


class Every(QueueMessageWithId, abstract=True):
    """A field of each type and constraint that compiles (a message class without a queue)."""

    key: str
    text: str
    short: str | None = Field(default=None, min_length=2, max_length=3)
    count: int
    small: int = Field(ge=-5, lt=5)
    flag: bool
    amount: Decimal
    exact: Decimal = Field(max_digits=6, decimal_places=2, gt=Decimal("-100.5"))
    day: date
    at: AwareDatetime
    utc: UtcDatetime | None = None
    colour: Colour
    level: Literal[1, 2, 3]
    kind: Literal["a", "b"] = Field(alias="Kind")
    leaf: Leaf
    leaves: list[Leaf] = Field(default_factory=list, max_length=3)
    tags: list[str] = Field(min_length=1)
    grid: list[list[int | None]]
    absent: int = 7

    @property
    def message_id(self) -> str:
        return self.key


LEAF = "struct<code: string, quantity: int, price: decimal(12, 2), note: string>"
SCHEMA = (
    f"key string, text string, short string, count bigint, small smallint, flag boolean, amount decimal(38, 18), "
    f"exact decimal(10, 4), day date, at timestamp, utc timestamp, colour string, level int, Kind string, "
    f"leaf {LEAF}, leaves array<{LEAF}>, tags array<string>, grid array<array<bigint>>"
)
ESCAPES = [chr(code) for code in range(32)] + ['"', "\\", "/", "\x7f", "\u2028", "\u2029", "\U0001f600", "é"]
TEXT = st.text(st.one_of(st.sampled_from(ESCAPES), st.characters(exclude_categories=["Cs"])), max_size=8)
PLAIN = st.text(
    st.one_of(st.sampled_from(ESCAPES[1:]), st.characters(exclude_categories=["Cs"], exclude_characters="\x00")),
    max_size=8,
)
TIMES = st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59), timezones=st.just(UTC))
SPECIAL_DECIMALS = ["0", "-0.00", "1E+2", "0E-18", "0.000000000000000001", "-99999999999999999999.5", "24.90"]


def decimals(places: int, digits: int) -> st.SearchStrategy[Decimal]:
    """Decimals of every scale up to ``places`` and sign, ``digits`` before the point at most."""
    scaled = st.tuples(st.integers(-(10**digits) + 1, 10**digits - 1), st.integers(0, places))
    return st.one_of(
        scaled.map(lambda pair: Decimal(pair[0]).scaleb(-pair[1])),
        st.sampled_from(SPECIAL_DECIMALS).map(Decimal).filter(lambda d: abs(d) < 10**digits),
    )


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``strategy``, now and then (one time in 80) null."""
    return st.tuples(st.integers(0, 79), strategy).map(lambda pair: None if pair[0] == 0 else pair[1])


def rarely(strategy: st.SearchStrategy[Any], valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` mostly; ``strategy`` (which may be invalid) one time in 25."""
    return st.tuples(st.integers(0, 24), strategy, valid).map(lambda t: t[1] if t[0] == 0 else t[2])


def leaves() -> st.SearchStrategy[Any]:
    codes = rarely(st.sampled_from(["A", "ab", "AB\n", "XAB", "AB\u2028"]), st.sampled_from(["AB", "ZZ"]))
    return maybe(
        st.tuples(
            maybe(codes),
            maybe(rarely(st.integers(-2, 0), st.integers(1, 5))),
            maybe(rarely(decimals(3, 10), decimals(2, 10))),
            maybe(PLAIN),
        )
    )


ROWS = st.tuples(
    rarely(st.sampled_from(["", "x" * 256]), st.sampled_from(["k1", "k2"]) | PLAIN),
    maybe(rarely(TEXT, PLAIN)),
    maybe(rarely(PLAIN, st.text(max_size=3, min_size=2))),
    maybe(st.integers(-(2**63), 2**63 - 1)),
    maybe(rarely(st.integers(-6, 6), st.integers(-5, 4))),
    maybe(st.booleans()),
    maybe(decimals(18, 20)),
    maybe(rarely(decimals(4, 6), decimals(2, 2))),
    maybe(st.dates()),
    maybe(TIMES),
    maybe(TIMES),
    maybe(rarely(st.sampled_from(["RED", ""]), st.sampled_from(["red", "blue"]))),
    maybe(rarely(st.integers(0, 4), st.integers(1, 3))),
    maybe(rarely(st.just("c"), st.sampled_from(["a", "b"]))),
    leaves(),
    maybe(rarely(st.lists(leaves(), max_size=5), st.lists(leaves(), max_size=3))),
    maybe(rarely(st.lists(maybe(PLAIN), max_size=3), st.lists(PLAIN, min_size=1, max_size=3))),
    maybe(st.lists(maybe(st.lists(maybe(st.integers(-5, 5)), max_size=3)), max_size=3)),
)


def both_paths(
    frame: DataFrame, message_class: type[QueueMessageWithId], time_zone: str = "UTC"
) -> list[tuple[dict[str, Any], StagedRow]]:
    """Each row's staged columns on the JVM path beside what the Python path (RowStager, row by row) stages for it,
    from one Spark job (its input columns read as the Python path reads them, through Arrow)."""
    compiled = staged_columns(message_class, frame.schema, time_zone=time_zone)
    names = [field.name for field in frame.schema.fields]
    table = frame.selectExpr("*", *(f"{compiled[name]} AS nexus_{name}" for name in STAGED_COLUMNS)).toArrow()
    stager = RowStager(message_class, 0, 0, NOW, whole_batches=False)
    python = stager.rows(pa.RecordBatch.from_arrays([table.column(n).combine_chunks() for n in names], names=names))
    jvm = table.select([f"nexus_{name}" for name in STAGED_COLUMNS]).to_pylist()
    return [
        ({name: row[f"nexus_{name}"] for name in STAGED_COLUMNS}, staged)
        for row, staged in zip(jvm, python, strict=True)
    ]


def python_fields(staged: StagedRow) -> set[str]:
    assert staged.reject is not None
    return {error["field"] for error in json.loads(staged.reject)["errors"]}


def assert_same(jvm: dict[str, Any], staged: StagedRow, qualname: str) -> None:
    """The JVM's row is the Python path's: the same message, hash and id, or rejected naming the same fields (NUL
    and the message id aside: the JVM names every value holding NUL, and checks the id as it validates)."""
    if staged.reject is None:
        assert jvm == {
            "message_id": staged.message_id,
            "message": staged.message,
            "message_hash": staged.message_hash,
            "errors": None,
        }, staged
        return
    assert jvm["errors"] is not None and jvm["message"] is None and jvm["message_hash"] is None, (jvm, staged)
    found = {error["field"] for error in json.loads(jvm["errors"])}
    expected = python_fields(staged)

    def validation(fields: set[str]) -> set[str]:
        return {f for f in fields if f != "(message)" and not f.startswith(qualname + ".")}

    assert validation(found) == validation(expected), (jvm, staged.reject)
    if not validation(expected):  # refused when stored (NUL) or by its id: the JVM names it too
        assert expected <= found, (jvm, staged.reject)


BASE = (
    "k1", "".join(ESCAPES[1:]), "abc", 2**63 - 1, -5, True, Decimal("-0.00"), Decimal("-100.49"), date(1, 1, 1),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "blue", 3, "b",
    ("AB", 1, Decimal("1E+2"), "\U0001f600"), [], ["/"], [[], [None, -1]],
)  # fmt: skip
"""A valid row: every character canonical JSON escapes (and some it does not), the extremes of ints and times."""
NUL_IN_SHORT = (*BASE[:2], "a\x00", *BASE[3:])
BACKSLASH_U = (
    *BASE[:1], "\\u000B\\\x0b\\\\u001F\x1f\\\\\x1a", *BASE[2:14], ("AB", 1, Decimal(1), "\\u000e"), *BASE[15:]
)  # fmt: skip
"""A valid row holding the text of escapes (a backslash, then ``u000B``) beside real ones: written as they are."""


@example(rows=[BASE, NUL_IN_SHORT, BACKSLASH_U, (*BASE[:6], Decimal("1E-18"), Decimal("0"), *BASE[8:])])
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(ROWS, min_size=1, max_size=40))
def test_staged_columns__same_as_the_python_path(spark: SparkSession, rows: list[tuple[Any, ...]]) -> None:
    """Every row staged on the JVM path is what the Python path stages: the canonical JSON, hash and id byte for byte
    (escapes, characters outside the BMP, decimals of any scale, times with and without fractions, nested and empty
    lists, nulls), or a reject naming the same fields. Its explicit example holds valid rows (``BASE``,
    ``BACKSLASH_U``), so accepted rows are compared whatever it draws."""
    with per_operator_code(spark):
        for jvm, staged in both_paths(spark.createDataFrame(rows, SCHEMA), Every):
            assert_same(jvm, staged, "Every")


@contextmanager
def per_operator_code(spark: SparkSession) -> Iterator[None]:
    """Whole-stage code generation off in the block. ``Every``'s whole-stage method is over Java's 64 KB: Spark
    would compile it, fail ("Code grows beyond 64 KB") and run the code it generates per operator, as here, seconds
    later in each example (a sync of the class runs the same code after the same failure)."""
    own = spark.conf.get(WHOLE_STAGE, None)
    spark.conf.set(WHOLE_STAGE, "false")
    try:
        yield
    finally:
        if own is None:
            spark.conf.unset(WHOLE_STAGE)
        else:
            spark.conf.set(WHOLE_STAGE, own)


class Loose(BaseModel):
    """A nested model that ignores extra fields (pydantic's default)."""

    name: str
    size: int = 1


class Shaped(QueueMessageWithId, abstract=True):
    """Fields that a missing column fills from their default, or that every row then lacks."""

    key: int
    part: Loose
    label: str = "plain"
    parts: list[Loose] = []
    price: Decimal = Decimal("24.90")
    required: str

    @property
    def message_id(self) -> int:  # type: ignore[override]  # message_id_of stores an int id as its text
        return self.key


class Catalogued(QueueMessageWithId, abstract=True):
    """The demo catalogue's ProductUpdated (its app is not installed in the tests' settings), with its Price."""

    sku: str
    name: str
    prices: list[DemoPrice]

    @property
    def message_id(self) -> str:
        return self.sku


class InUtc(QueueMessageWithId, abstract=True):
    key: str
    at: UtcDatetime

    @property
    def message_id(self) -> str:
        return self.key


@pytest.mark.parametrize(
    ("ddl", "rows"),
    [
        # every row lacks "required": each is refused naming it; "label", "parts" and "price" take their defaults
        ("key bigint, part struct<name: string, extra: string>", [(1, ("a", "x")), (2, None)]),
        (
            "key bigint, required string, part struct<name: string, size: int>, other string",  # "other" is forbidden
            [(1, "r", ("a", 2), None), (2, "r", ("b", None), "o")],
        ),
        (
            "key bigint, required string, part struct<name: string, extra: string>, label string",
            [(1, "r", ("a", "ignored"), None), (-3, "r", ("é\n", None), "x")],
        ),
    ],
)
def test_staged_columns__missing_and_extra_columns_as_pydantic(spark: SparkSession, ddl: str, rows: list[Any]) -> None:
    """A missing column takes the field's default or refuses every row ("Field required"); a column that is no field
    refuses every row where the class forbids extras, and is dropped where the nested model ignores them."""
    staged = both_paths(spark.createDataFrame(rows, ddl), Shaped)
    for jvm, python in staged:
        assert_same(jvm, python, "Shaped")
    assert any(python.reject is None for _, python in staged) == ("required" in ddl and "other" not in ddl)


def test_select_staged__the_same_rows_as_the_expressions(spark: SparkSession) -> None:
    """select_staged (three projections, each expression evaluated once) gives what staged_columns' expressions do."""
    rows = [("k", 1, ("AB", 2, Decimal("1.50"), None)), ("", 2, None), ("z", 0, ("ab", 1, Decimal(1), "n"))]
    frame = spark.createDataFrame(rows, f"key string, count bigint, leaf {LEAF}")

    class Small(QueueMessageWithId, abstract=True):
        key: str
        count: int = Field(ge=1)
        leaf: Leaf

        @property
        def message_id(self) -> str:
            return self.key

    compiled = staged_columns(Small, frame.schema)
    expected = frame.selectExpr("count", *(f"{compiled[n]} AS {n}" for n in STAGED_COLUMNS)).collect()
    assert select_staged(frame, Small, ("count",)).collect() == expected
    assert [row.errors is None for row in expected] == [True, False, False]


def test_staged_columns__utc_times_from_a_session_in_another_zone(spark: SparkSession) -> None:
    """A UtcDatetime is written in UTC by both paths when the session's time zone is not UTC."""
    rows = [("a", datetime(2024, 3, 1, 12, 30, tzinfo=UTC)), ("b", datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=UTC))]
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kathmandu")
    try:
        frame = spark.createDataFrame(rows, "key string, at timestamp")
        assert staged_columns(InUtc, frame.schema, time_zone="Asia/Kathmandu")
        for jvm, python in both_paths(frame, InUtc, time_zone="Asia/Kathmandu"):
            assert_same(jvm, python, "InUtc")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_staged_columns__the_demo_catalogue(spark: SparkSession) -> None:
    """The demo's ProductUpdated compiles, and stages what the Python path stages."""
    price = "struct<currency: string, amount: decimal(38, 18), valid_from: timestamp, valid_to: timestamp>"
    rows = [
        ("SKU-1", "Lamp", [("EUR", Decimal("9.95"), datetime(2026, 1, 1, tzinfo=UTC), None)]),
        ("SKU-2", 'Desk "oak"', []),
        ("SKU-3", "Chair", [("EUR", None, None, None)]),
    ]
    frame = spark.createDataFrame(rows, f"sku string, name string, prices array<{price}>")
    for jvm, python in both_paths(frame, Catalogued):
        assert_same(jvm, python, "Catalogued")


class Size(IntEnum):
    SMALL = 1
    LARGE = 2


class Counted(QueueMessageWithId, abstract=True):
    """An int Enum from an int column, a Decimal from a long column, an int message id."""

    number: int
    size: Size
    amount: Decimal = Field(max_digits=4, ge=-10)

    @property
    def message_id(self) -> int:  # type: ignore[override]  # message_id_of stores an int id as its text
        return self.number


def test_staged_columns__int_enums_and_decimals_from_integers(spark: SparkSession) -> None:
    """An int Enum and a Decimal compile from integer columns, written and checked as the Python path does."""
    rows = [(1, 1, 0), (-2, 2, 9999), (3, 3, 10000), (4, 1, -11), (2**63 - 1, None, -10), (5, 2, None)]
    staged = both_paths(spark.createDataFrame(rows, "number bigint, size int, amount bigint"), Counted)
    for jvm, python in staged:
        assert_same(jvm, python, "Counted")
    assert [python.reject is None for _, python in staged] == [True, True, False, False, False, False]
