"""A batch validated whole stages exactly what the per-row path stages: the same rows accepted and refused, the
same reasons, the same JSON bytes and hash (property tests over every field type the Spark guide lists)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AwareDatetime, BaseModel, Field, field_validator

from nexus_queues import QueueMessageWithId, UtcDatetime
from nexus_queues.contrib.spark.columnar import Unsupported, plan_message
from nexus_queues.contrib.spark.rows import RowStager

NOW = datetime(2030, 1, 1, tzinfo=UTC)
UTC_TIME = pa.timestamp("us", tz="UTC")


class Color(StrEnum):
    RED = "red"
    GREEN = "green"


class Size(IntEnum):
    SMALL = 1
    LARGE = 2


class Part(BaseModel):
    label: str
    count: int | None = None
    at: UtcDatetime | None = None


class Everything(QueueMessageWithId, abstract=True):
    """A field of each type a batch is validated whole for (a message class without a queue)."""

    key: Annotated[str, Field(min_length=1)]
    text: str
    code: Annotated[str, Field(max_length=4, pattern=r"^[A-Z]+$")]
    number: int
    small: Annotated[int, Field(ge=-5, le=5)]
    flag: bool
    money: Decimal
    fine: Decimal
    whole: Decimal
    limited: Annotated[Decimal, Field(max_digits=6, decimal_places=2)]
    moment: AwareDatetime
    utc: UtcDatetime
    local: datetime
    day: date
    ident: UUID
    color: Color
    size: Size
    kind: Literal["a", "b"]
    maybe: int | None
    part: Part
    parts: list[Part]
    numbers: list[int]
    maybe_parts: list[Part] | None = None

    @property
    def message_id(self) -> str:
        return self.key


PART = pa.struct([("count", pa.int64()), ("label", pa.string()), ("at", UTC_TIME)])  # not in the class's order
SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("text", pa.large_string()),
        ("code", pa.string()),
        ("number", pa.int64()),
        ("small", pa.int32()),
        ("flag", pa.bool_()),
        ("money", pa.decimal128(12, 2)),
        ("fine", pa.decimal128(38, 10)),
        ("whole", pa.decimal128(20, 0)),
        ("limited", pa.decimal128(10, 4)),
        ("moment", UTC_TIME),
        ("utc", pa.timestamp("ms", tz="Europe/Stockholm")),
        ("local", pa.timestamp("us")),
        ("day", pa.date32()),
        ("ident", pa.string()),
        ("color", pa.string()),
        ("size", pa.int16()),
        ("kind", pa.string()),
        ("maybe", pa.int64()),
        ("part", PART),
        ("parts", pa.list_(PART)),
        ("numbers", pa.large_list(pa.int64())),
        ("maybe_parts", pa.list_(PART)),
        ("process_at", UTC_TIME),
    ]
)
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
"""Any text Arrow holds: quotes, backslashes, control characters (NUL too), any script."""
PLAIN_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
TIMES = st.datetimes(datetime(1000, 1, 1), datetime(9999, 12, 30), timezones=st.just(UTC))


def decimals(places: int, digits: int) -> st.SearchStrategy[Decimal]:
    return st.integers(-(10**digits) + 1, 10**digits - 1).map(lambda n: Decimal(n).scaleb(-places))


def maybe_null(strategy: st.SearchStrategy[Any], valid: bool) -> st.SearchStrategy[Any]:
    """``strategy``, or else (unless ``valid``) null, which a required field refuses."""
    return strategy if valid else st.one_of(strategy, strategy, strategy, st.none())


@st.composite
def parts(draw: st.DrawFn, valid: bool) -> dict[str, Any] | None:
    return {
        "label": draw(maybe_null(PLAIN_TEXT if valid else TEXT, valid)),
        "count": draw(st.none() | st.integers(-(2**63), 2**63 - 1)),
        "at": draw(st.none() | (TIMES if valid else st.datetimes(timezones=st.just(UTC)))),
    }


@st.composite
def rows(draw: st.DrawFn, valid: bool) -> dict[str, Any]:
    """A row of :data:`SCHEMA`: one the class accepts (``valid``), or any."""
    either = (lambda good, bad: good) if valid else (lambda good, bad: st.one_of(good, bad))
    ident = st.uuids().map(str)
    row = {
        "key": draw(either(PLAIN_TEXT.filter(bool), TEXT)),
        "text": draw(PLAIN_TEXT if valid else TEXT),
        "code": draw(either(st.from_regex(r"[A-Z]{1,4}", fullmatch=True), TEXT)),
        "number": draw(st.integers(-(2**63), 2**63 - 1)),
        "small": draw(either(st.integers(-5, 5), st.integers(-(2**31), 2**31 - 1))),
        "flag": draw(st.booleans()),
        "money": draw(decimals(2, 10)),
        "fine": draw(decimals(10, 28) | decimals(10, 3)),
        "whole": draw(decimals(0, 20)),
        "limited": draw(either(decimals(2, 4).map(lambda d: d.quantize(Decimal("0.0001"))), decimals(4, 10))),
        "moment": draw(TIMES if valid else st.datetimes(timezones=st.just(UTC))),
        "utc": draw(TIMES.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
        "local": draw(st.datetimes(datetime(1000, 1, 1))),
        "day": draw(st.dates(date(1000, 1, 1)) if valid else st.dates()),
        "ident": draw(either(ident, ident.map(str.upper) | TEXT)),
        "color": draw(either(st.sampled_from(["red", "green"]), st.sampled_from(["blue", "RED"]))),
        "size": draw(either(st.sampled_from([1, 2]), st.integers(-3, 3))),
        "kind": draw(either(st.sampled_from(["a", "b"]), TEXT)),
        "maybe": draw(st.none() | st.integers(-(2**63), 2**63 - 1)),
        "part": draw(maybe_null(parts(valid), valid)),
        "parts": draw(maybe_null(st.lists(parts(valid), max_size=3), valid)),
        "numbers": draw(maybe_null(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3), valid)),
        "maybe_parts": draw(st.none() | st.lists(parts(valid), max_size=2)),
        "process_at": draw(st.none() | (TIMES if valid else st.datetimes(timezones=st.just(UTC)))),
    }
    return {name: draw(maybe_null(st.just(value), valid)) if name != "key" else value for name, value in row.items()}


def staged(message_class: type[Any], batch: pa.RecordBatch, *, whole_batches: bool) -> tuple[list[Any], int]:
    stager = RowStager(message_class, token=7, partition=3, now=NOW, whole_batches=whole_batches)
    return stager.rows(batch) + stager.rows(batch.slice(1)), stager.row_by_row


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rows(valid=False), min_size=1, max_size=6))
def test_whole_batch__stages_what_the_per_row_path_stages(batch_rows: list[dict[str, Any]]) -> None:
    """Any rows, refused ones too: the same staged rows (messages, JSON bytes, hashes, rejects and their reasons)."""
    batch = pa.RecordBatch.from_pylist(batch_rows, schema=SCHEMA)

    whole, _ = staged(Everything, batch, whole_batches=True)
    row_by_row, _ = staged(Everything, batch, whole_batches=False)

    assert whole == row_by_row


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rows(valid=True), min_size=1, max_size=6))
def test_whole_batch__accepted_rows_take_no_per_row_path(batch_rows: list[dict[str, Any]]) -> None:
    """Rows the class accepts are validated a batch at a time, and stage what the per-row path stages."""
    batch = pa.RecordBatch.from_pylist(batch_rows, schema=SCHEMA)

    whole, per_row_count = staged(Everything, batch, whole_batches=True)
    row_by_row, _ = staged(Everything, batch, whole_batches=False)

    assert (whole, per_row_count) == (row_by_row, 0)
    assert all(row.reject is None for row in whole)


class Keyed(QueueMessageWithId, abstract=True):
    key: str

    @property
    def message_id(self) -> str:
        return self.key


class WithFloat(Keyed, abstract=True):
    ratio: float


class WithMap(Keyed, abstract=True):
    counts: dict[str, int]


class WithZone(Keyed, abstract=True):
    moment: AwareDatetime


class WithValidator(Keyed, abstract=True):
    @field_validator("key")
    @classmethod
    def shouting(cls, value: str) -> str:
        return value.upper()


@pytest.mark.parametrize(
    ("message_class", "column"),
    [
        (WithFloat, ("ratio", pa.float64(), 0.1)),
        (WithMap, ("counts", pa.map_(pa.string(), pa.int64()), [("a", 1)])),
        (WithZone, ("moment", pa.timestamp("us", tz="Europe/Stockholm"), datetime(2030, 6, 1, tzinfo=UTC))),
        (WithValidator, None),
    ],
)
def test_whole_batch__other_fields_take_the_per_row_path(message_class: type[Any], column: Any) -> None:
    """A float, a map, an aware time in a zone other than UTC (kept in it), a validator of the project's own:
    row by row, with the same result."""
    fields, values = [("key", pa.string())], [pa.array(["k"])]
    if column:
        fields.append(column[:2])
        values.append(pa.array([column[2]], column[1]))
    batch = pa.RecordBatch.from_arrays(values, schema=pa.schema(fields))

    with pytest.raises(Unsupported):
        plan_message(batch.schema, message_class.__pydantic_core_schema__, frozenset())
    whole, per_row_count = staged(message_class, batch, whole_batches=True)
    assert (whole, per_row_count) == (staged(message_class, batch, whole_batches=False)[0], 1)
