"""All or nothing: rejected rows, failed and retried tasks, and what they leave behind."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.db import connection
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from nexus_queues import enqueue
from nexus_queues.contrib.spark import SyncFailed, sync
from nexus_queues.contrib.spark.models import Sync
from nexus_queues.staging import PREFIX
from tests.testapp.queues import Inventory, Product

pytestmark = pytest.mark.django_db(transaction=True)

PRODUCT = "sku string, name string, prices array<struct<currency string, amount decimal(10,2)>>"


def with_bad_rows(frame: Any) -> DataFrame:
    rows = [(f"SKU-{i}", f"Product {i}", [("EUR", Decimal("1.00"))]) for i in range(8)]
    rows[2] = ("SKU-2", None, [("EUR", Decimal("1.00"))])
    rows[5] = ("SKU-5", "Product 5", [(None, Decimal("1.00"))])
    return frame(rows, PRODUCT)


def staging_tables() -> list[str]:
    return [t for t in connection.introspection.table_names() if t.startswith(PREFIX)]


def inventory(spark: SparkSession, count: int, fail_at: int | None = None, attempts: int = 2) -> DataFrame:
    """Inventory rows in two partitions; the row ``fail_at`` raises in its task's first ``attempts`` tries."""

    @F.udf(returnType="int", useArrow=False)  # Arrow UDFs need pandas
    def quantity(n: int) -> int:
        if n == fail_at and TaskContext.get().attemptNumber() < attempts:  # type: ignore[union-attr]
            raise RuntimeError(f"row {n} failed")
        return n

    ids = spark.range(count, numPartitions=2)
    return ids.select(
        F.concat(F.lit("SKU-"), F.col("id").cast("string")).alias("sku"), quantity("id").alias("quantity")
    )


def test_rejects__written_with_reason_per_field(frame: Any, tmp_path: Path) -> None:
    """Rows the message class refuses go to the rejects file with the reason per field; the rest are stored."""
    path = tmp_path / "rejects.parquet"

    counts = sync(with_bad_rows(frame), Product, rejects=str(path))

    assert (counts.new, counts.rejected) == (6, 2)
    assert sorted(Product.queue_items().values_list("message_id", flat=True)) == [
        f"SKU-{i}" for i in (0, 1, 3, 4, 6, 7)
    ]
    rejects = sorted(pq.read_table(path).to_pylist(), key=lambda r: json.loads(r["row"])["sku"])
    assert [json.loads(r["row"])["sku"] for r in rejects] == ["SKU-2", "SKU-5"]
    assert [[e["field"] for e in r["errors"]] for r in rejects] == [["name"], ["prices.0.currency"]]
    assert all(e["reason"] for r in rejects for e in r["errors"])


def test_rejects__json_lines(frame: Any, tmp_path: Path) -> None:
    """A rejects path ending in .jsonl gets one JSON object per rejected row."""
    path = tmp_path / "rejects.jsonl"

    sync(with_bad_rows(frame), Product, rejects=str(path))

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(line["row"]["sku"] for line in lines) == ["SKU-2", "SKU-5"]


def test_rejects__beyond_max_rejects_store_nothing(frame: Any, tmp_path: Path) -> None:
    """More rejects than max_rejects fail the sync: nothing stored, the rejects still written, the record says why."""
    enqueue(Product(sku="KEPT", name="Kept"))
    path = tmp_path / "rejects.parquet"

    with pytest.raises(SyncFailed, match=r"2 rows were rejected, more than max_rejects \(1\)"):
        sync(with_bad_rows(frame), Product, rejects=str(path), max_rejects=1)

    assert list(Product.queue_items().values_list("message_id", flat=True)) == ["KEPT"]
    assert pq.read_table(path).num_rows == 2
    assert Sync.objects.get().state == Sync.State.FAILED
    assert staging_tables() == []


def test_rejects__without_a_path_any_reject_fails(frame: Any) -> None:
    """With nowhere to put them, rejects are not dropped: the sync fails and names the first."""
    with pytest.raises(SyncFailed, match=r"more than max_rejects \(0\).*SKU-2"):
        sync(with_bad_rows(frame), Product)

    assert Product.queue_items().count() == 0


def test_rejects__placement_columns_checked(frame: Any, tmp_path: Path) -> None:
    """A status a sync may not set, or a status beside a process_at, rejects the row naming the column."""
    path = tmp_path / "rejects.jsonl"
    rows = [("A", 1, "Leased", None), ("B", 2, "OnHold", "2030-01-01 00:00:00"), ("C", 3, "OnHold", None)]
    df = frame(rows, "sku string, quantity int, status string, process_at string").withColumn(
        "process_at", F.to_timestamp("process_at")
    )

    counts = sync(df, Inventory, rejects=str(path))

    assert (counts.new, counts.rejected) == (1, 2)
    assert Inventory.queue_items().get().status == "OnHold"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    fields = sorted((line["row"]["sku"], line["errors"][0]["field"]) for line in lines)
    assert fields == [("A", "status"), ("B", "status")]


def test_failed_task__stores_nothing_and_a_rerun_stores_all_once(spark: SparkSession) -> None:
    """A task failing part-way through its partition fails the sync: the queue is as it was, the staged rows
    are gone; run again without the failure, every row is stored once."""
    enqueue(Inventory(sku="SKU-3", quantity=-1))

    with pytest.raises(SyncFailed, match=r"a task failed.*RuntimeError: row 900 failed"):
        sync(inventory(spark, 1000, fail_at=900), Inventory)

    assert [(i.message.sku, i.message.quantity) for i in Inventory.queue_items()] == [("SKU-3", -1)]
    assert staging_tables() == []

    counts = sync(inventory(spark, 1000), Inventory)

    assert (counts.new, counts.changed) == (999, 1)
    assert Inventory.queue_items().count() == 1000
    assert sorted(i.message.quantity for i in Inventory.queue_items()) == list(range(1000))


def test_retried_task__its_first_attempt_is_left_out(spark: SparkSession) -> None:
    """A task that fails once after staging rows and succeeds on its retry: each row is stored once,
    the failed attempt's staged rows are not merged."""
    counts = sync(inventory(spark, 1000, fail_at=900, attempts=1), Inventory)

    assert (counts.new, counts.superseded) == (1000, 0)
    assert Inventory.queue_items().count() == 1000


def test_rejects__position_is_the_rows_number_in_the_dataframe(spark: SparkSession, tmp_path: Path) -> None:
    """A reject's position is its row's number (0-based) in the DataFrame's order, as df.rdd.zipWithIndex()
    numbers it, beside the Spark partition it was in: row 1 of a 3-row DataFrame in 3 partitions reads 1."""
    path = tmp_path / "rejects.jsonl"
    rows = [("SKU-0", 1), ("SKU-1", None), ("SKU-2", 3), ("SKU-3", None), ("SKU-4", 5)]
    df = spark.createDataFrame(rows, "sku string, quantity int").repartition(3).cache()

    sync(df, Inventory, rejects=str(path))

    numbered = {row["sku"]: index for row, index in df.rdd.zipWithIndex().collect()}
    partitions = {
        r["sku"]: r["partition"] for r in df.select("sku", F.spark_partition_id().alias("partition")).collect()
    }
    found = sorted(
        (r["row"]["sku"], r["position"], r["partition"]) for r in map(json.loads, path.read_text().splitlines())
    )
    assert found == [(sku, numbered[sku], partitions[sku]) for sku in ("SKU-1", "SKU-3")]


def test_rejects__position_in_the_parquet_file_and_the_error(spark: SparkSession, tmp_path: Path) -> None:
    """The Parquet rejects file and the error of a failed sync give the same positions."""
    path = tmp_path / "rejects.parquet"
    df = spark.createDataFrame([("SKU-0", 1), ("SKU-1", None), ("SKU-2", 3)], "sku string, quantity int").coalesce(1)

    sync(df, Inventory, rejects=str(path))
    with pytest.raises(SyncFailed, match=r'"position": 1, "partition": 0'):
        sync(df, Inventory)

    assert [(r["position"], r["partition"]) for r in pq.read_table(path).to_pylist()] == [(1, 0)]
