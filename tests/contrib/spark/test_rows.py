"""Placement columns of a row: checked by enqueue's rules, a refusal blamed on the column that caused it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from nexus_queues import Status
from nexus_queues.contrib.spark.rows import RowStager
from tests.testapp.queues import Inventory

LATER = datetime(2031, 1, 1, tzinfo=UTC)


def staged(**placement: Any) -> Any:
    batch = pa.RecordBatch.from_pylist([{"sku": "A", "quantity": 1, **placement}])
    return RowStager(Inventory, token=1, partition=0, now=datetime(2030, 1, 1, tzinfo=UTC)).rows(batch)[0]


def errors(row: Any) -> list[dict[str, str]]:
    return json.loads(row.reject)["errors"]


def test_row_stager__process_at_schedules() -> None:
    """A row with process_at becomes a Sleeping message due then."""
    row = staged(process_at=LATER)

    assert (row.reject, row.status, row.process_at) == (None, Status.SLEEPING, LATER)


def test_row_stager__status_and_process_at_blames_status() -> None:
    """A row with a status (OnHold) and a process_at, each fine alone, is rejected on its status."""
    row = staged(process_at=LATER, status="OnHold")

    assert [e["field"] for e in errors(row)] == ["status"]


def test_row_stager__bad_column_blamed_alone() -> None:
    """A row whose process_at is naive is rejected on process_at, whatever its status."""
    row = staged(process_at=datetime(2031, 1, 1), status="OnHold")

    assert [e["field"] for e in errors(row)] == ["process_at"]
