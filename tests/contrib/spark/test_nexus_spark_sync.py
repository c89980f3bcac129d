"""``manage.py nexus_spark_sync``: a file into a queue, its counts, its failures, and its arguments."""

from __future__ import annotations

import argparse
from io import StringIO
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from pyspark.sql import SparkSession

from nexus_queues.contrib.spark.management.commands.nexus_spark_sync import setting
from tests.testapp.queues import Inventory


def write_inventory(path: Path, quantities: list[int | None]) -> Path:
    skus = [f"SKU-{i}" for i in range(len(quantities))]
    pq.write_table(pa.table({"sku": skus, "quantity": pa.array(quantities, pa.int64())}), path)
    return path


def sync_file(*args: str) -> str:
    out = StringIO()
    call_command("nexus_spark_sync", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_nexus_spark_sync__prints_the_counts(spark: SparkSession, tmp_path: Path) -> None:
    """The command syncs the file and prints what it did."""
    path = write_inventory(tmp_path / "in.parquet", [1, 2, 3])

    output = sync_file("--queue", "inventory", "--input", str(path))

    assert "new: 3" in output and "unchanged: 0" in output
    assert Inventory.queue_items().count() == 3


@pytest.mark.django_db(transaction=True)
def test_nexus_spark_sync__csv(spark: SparkSession, tmp_path: Path) -> None:
    """CSV files are read with their header, and values converted by the message class."""
    path = tmp_path / "in.csv"
    path.write_text("sku,quantity\nA,1\nB,2\n")

    output = sync_file("--queue", "inventory", "--input", str(path), "--format", "csv")

    assert "new: 2" in output
    assert sorted(i.message.quantity for i in Inventory.queue_items()) == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_nexus_spark_sync__failure_exits_with_nothing_stored(spark: SparkSession, tmp_path: Path) -> None:
    """Rejects beyond --max-rejects are a CommandError (a non-zero exit), and nothing is stored."""
    path = write_inventory(tmp_path / "in.parquet", [1, None, None])

    with pytest.raises(CommandError, match="more than max_rejects"):
        sync_file(
            "--queue", "inventory", "--input", str(path), "--rejects", str(tmp_path / "r.jsonl"), "--max-rejects", "1"
        )

    assert Inventory.queue_items().count() == 0
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--queue", "nope", "--input", "x"], "No queue named 'nope'"),
        (["--queue", "inventory", "--input", "/nonexistent/file.parquet"], "Nothing was stored"),
    ],
)
def test_nexus_spark_sync__bad_input(spark: SparkSession, args: list[str], error: str) -> None:
    """An unknown queue or a missing file is a clear error."""
    with pytest.raises(CommandError, match=error):
        sync_file(*args)


def test_setting__key_and_value() -> None:
    """KEY=VALUE becomes the pair; the value keeps any further equals sign."""
    assert setting("spark.executor.memory=4g") == ("spark.executor.memory", "4g")
    assert setting("spark.executor.extraJavaOptions=-Da=b") == ("spark.executor.extraJavaOptions", "-Da=b")


@pytest.mark.parametrize("text", ["spark.ui.enabled", "=false", " =false"])
def test_setting__without_key_or_equals(text: str) -> None:
    """A setting without a key or an equals sign is refused, showing the form it takes."""
    with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
        setting(text)


def test_nexus_spark_sync__bad_conf() -> None:
    """A malformed --conf stops the command before any Spark starts."""
    with pytest.raises(CommandError, match="--conf: must read KEY=VALUE"):
        call_command("nexus_spark_sync", "--queue", "products", "--input", "rows.parquet", "--conf", "spark.ui.enabled")
