"""The placement columns (``process_at``, ``expires_at``, ``status``) on the JVM path: staged as the Python path
(RowStager, enqueue's rules) stages them, refused rows naming the same column (a property over times and statuses)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

from nexus_queues import QueueMessageWithId
from nexus_queues.contrib.spark.compiling import STAGED_COLUMNS, select_staged, staged_columns
from nexus_queues.contrib.spark.rows import RowStager
from nexus_queues.staging import StagedRow

pytestmark = pytest.mark.slow
NOW = datetime(2030, 1, 1, tzinfo=UTC)
PLACED = ("process_at", "expires_at", "status")


class Placed(QueueMessageWithId, abstract=True):
    key: str
    count: int = 0

    @property
    def message_id(self) -> str:
        return self.key


TIMES = st.one_of(
    st.datetimes(datetime(1000, 1, 1), datetime(9999, 12, 30, 23, 59, 59, 999999), timezones=st.just(UTC)),
    st.sampled_from([datetime(999, 12, 31, 23, 59, 59, 999999), datetime(9999, 12, 31)]).map(
        lambda moment: moment.replace(tzinfo=UTC)
    ),
)
STATUSES = st.sampled_from(
    ["Pending", "Processed", "Error", "Abandoned", "Cancelled", "Leased", "Sleeping", "pending", "ERROR", "Held 2",
     "held.back-1", "x" * 51, "1st", "Held ", " Held", "Held\n", "é", "", "Wait'ing"]
)  # fmt: skip
ROWS = st.tuples(
    st.sampled_from(["k1", "k2", ""]),
    st.integers(-5, 5),
    st.none() | TIMES,
    st.none() | TIMES,
    st.none() | STATUSES,
)
SCHEMA = "key string, count bigint, process_at timestamp, expires_at timestamp, status string"


def refused_status(reject: str) -> str:
    """The status a refused row held ('' for none)."""
    return json.loads(reject)["row"].get("status") or ""


def both_paths(frame: DataFrame) -> list[tuple[dict[str, Any], StagedRow]]:
    """Each row's staged columns, placement included, on the JVM path beside what RowStager stages for it."""
    compiled = staged_columns(Placed, frame.schema)
    names = [field.name for field in frame.schema.fields]
    table = frame.selectExpr("*", *(f"{sql} AS nexus_{name}" for name, sql in compiled.items())).toArrow()
    stager = RowStager(Placed, 0, 0, NOW, whole_batches=False)
    python = stager.rows(pa.RecordBatch.from_arrays([table.column(n).combine_chunks() for n in names], names=names))
    jvm = table.select([f"nexus_{name}" for name in compiled]).to_pylist()
    return [({n: row[f"nexus_{n}"] for n in compiled}, staged) for row, staged in zip(jvm, python, strict=True)]


@example(
    rows=[
        ("k1", 1, datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC), None, None),
        ("k1", 1, None, datetime(999, 1, 1, tzinfo=UTC), "Pending"),
        ("k1", 1, datetime(2026, 1, 1, tzinfo=UTC), None, "Error"),
        ("k1", 1, None, None, "Held 2"),
        ("", 1, None, None, "Leased"),
    ]
)
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(ROWS, min_size=1, max_size=20))
def test_staged_columns__placement_as_the_python_path(spark: SparkSession, rows: list[tuple[Any, ...]]) -> None:
    """A row's process_at, expires_at and status are staged as the Python path stages them (Sleeping with a time),
    and a row they refuse names the column the Python path names, with its reason."""
    for jvm, staged in both_paths(spark.createDataFrame(rows, SCHEMA)):
        if staged.reject is None:
            expected = {name: getattr(staged, name) for name in (*STAGED_COLUMNS, *PLACED) if name != "errors"}
            assert jvm == {**expected, "errors": None}, staged
            continue
        assert jvm["errors"] is not None and all(jvm[name] is None for name in PLACED), (jvm, staged)
        found = json.loads(jvm["errors"])
        expected_errors = json.loads(staged.reject)["errors"]
        placing = [error for error in expected_errors if error["field"] in PLACED]
        if not re.search(r"[^ -&(-\[\]-~]", refused_status(staged.reject)):  # repr() written as SQL for such text
            assert [error for error in found if error["field"] in PLACED] == placing, (found, staged.reject)
        assert {e["field"] for e in found} == {e["field"] for e in expected_errors}, (found, staged.reject)


def test_select_staged__placement_columns_from_the_frame(spark: SparkSession) -> None:
    """select_staged adds a staged column for each placement column the frame holds (a status for a process_at)."""
    at = datetime(2026, 5, 1, tzinfo=UTC)
    frame = spark.createDataFrame([("k", 1, at), ("", 2, at)], "key string, count bigint, process_at timestamp")
    rows = select_staged(frame, Placed).collect()
    assert rows[0].asDict() | {"message": None, "message_hash": None} == {
        "message_id": "k",
        "message": None,
        "message_hash": None,
        "errors": None,
        "process_at": at.replace(tzinfo=None),
        "status": "Sleeping",
    }
    assert rows[1].errors is not None and rows[1].process_at is None and rows[1].status is None
