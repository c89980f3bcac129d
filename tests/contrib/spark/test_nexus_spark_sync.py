"""``manage.py nexus_spark_sync``: a file into a queue, its counts, its failures, and its arguments."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from pyspark.sql import SparkSession

from nexus_queues import staging
from nexus_queues.contrib.spark.management.commands.nexus_spark_sync import setting, spark_conf
from nexus_queues.contrib.spark.models import Sync
from nexus_queues.contrib.spark.progress import rows_staged
from nexus_queues.contrib.spark.spreading import spread
from tests.commands import ROOT
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
        (["--queue", "inventory", "--input", "/nonexistent/file.parquet"], "No input at /nonexistent/file.parquet"),
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


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (["--on-complete", "batch_reports", "--on-complete-message", "{nope"], "message of queue 'batch_reports'"),
        (["--on-complete", "batch_reports", "--on-complete-message", '{"batch": 3}'], "is not a message of queue"),
        (["--on-complete-message", "{}"], "--on-complete-message needs --on-complete"),
        (["--on-complete", "no_such_queue"], "no_such_queue"),
    ],
)
def test_nexus_spark_sync__bad_completion_before_spark(extra: list[str], error: str) -> None:
    """A completion message that cannot be one stops the command, naming the option, before any Spark starts."""
    with pytest.raises(CommandError, match=error):
        call_command("nexus_spark_sync", "--queue", "products", "--input", "rows.parquet", *extra)


def write_skus(path: Path, rows: list[tuple[str, int]]) -> Path:
    """A Parquet file of (sku, quantity) in one row group: Spark reads it as one partition."""
    table = pa.table({"sku": [r[0] for r in rows], "quantity": pa.array([r[1] for r in rows], pa.int64())})
    pq.write_table(table, path, row_group_size=len(rows))
    return path


def test_spread__consecutive_rows_in_their_order(spark: SparkSession, tmp_path: Path) -> None:
    """One partition spread over two: each holds rows, consecutive ones, and the rows keep their order."""
    rows = [(f"SKU-{i}", i) for i in range(40)]
    df = spark.read.parquet(str(write_skus(tmp_path / "in.parquet", rows)))

    spread_df = spread(df, 2)
    parts = spread_df.rdd.glom().collect()

    assert df.rdd.getNumPartitions() == 1
    assert [len(part) for part in parts] == [20, 20]
    assert [(r.sku, r.quantity) for part in parts for r in part] == rows


@pytest.mark.django_db(transaction=True)
def test_nexus_spark_sync__one_file_over_every_core_last_row_wins(spark: SparkSession, tmp_path: Path) -> None:
    """A file Spark reads as one partition is synced in as many tasks as cores, and of several rows of one id
    the last in the file still wins, within a task's rows and across tasks (as with the file in one task)."""
    rows = [(f"SKU-{i}", i) for i in range(40)]
    rows[5] = ("SKU-1", 105)  # a later row of SKU-1, in the same half
    rows[30] = ("SKU-2", 130)  # a later row of SKU-2, in the other half
    rows[39] = ("SKU-20", 999)  # SKU-20 of the first half once more, last of all
    path = write_skus(tmp_path / "in.parquet", rows)

    output = sync_file("--queue", "inventory", "--input", str(path))

    assert "(1 partition, spread over 2 in its order)" in output
    assert "superseded: 3" in output
    stored = {item.message_id: item.message.quantity for item in Inventory.queue_items()}
    assert (stored["SKU-1"], stored["SKU-2"], stored["SKU-20"], len(stored)) == (105, 130, 999, 37)


@pytest.mark.django_db(transaction=True)
def test_rows_staged__counts_this_queues_staging_tables(spark: SparkSession) -> None:
    """The rows staged so far are those in the staging tables of syncs into the queue begun since then."""
    since = timezone.now().replace(microsecond=0)
    mine, other = staging.new_table_name("inventory"), staging.new_table_name("inventoryx")
    for table in (mine, other):
        staging.create("default", table)
    try:
        with connection.cursor() as cursor:
            for table in (mine, other):
                quoted = connection.ops.quote_name(table)
                cursor.execute(f"INSERT INTO {quoted} (token, position) VALUES (1, 1), (1, 2)")

        assert rows_staged("default", "inventory", since) == 2
        assert rows_staged("default", "inventory", since.replace(year=since.year + 1)) == 0
    finally:
        for table in (mine, other):
            staging.drop("default", table)


def test_spark_conf__quiet_unless_verbose() -> None:
    """Spark's JVM logs errors only and draws no progress bar, unless -v 2; a setting given wins."""
    quiet, verbose = spark_conf([], 1), spark_conf([("spark.ui.showConsoleProgress", "true")], 2)

    assert quiet["spark.ui.showConsoleProgress"] == "false"
    assert "log4j2-quiet.properties" in quiet["spark.driver.extraJavaOptions"]
    assert verbose == {"spark.ui.showConsoleProgress": "true"}


def run_command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "django", "nexus_spark_sync", *args]
    return subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_nexus_spark_sync__missing_file_one_line(child_env: dict[str, str]) -> None:
    """A missing input is one clear line and a non-zero exit, before Spark starts (no Java in the output)."""
    done = run_command(child_env, "--queue", "inventory", "--input", "/nonexistent/catalogue.parquet")

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "CommandError: No input at /nonexistent/catalogue.parquet: nothing was stored."
    ]


@pytest.fixture
def unmigrated_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment for a subprocess on an empty database of this engine (made for the test, dropped after)."""
    vendor = connection.vendor
    name = str(tmp_path / "empty.sqlite3") if vendor == "sqlite" else f"nq_unmigrated_{os.getpid()}"
    if vendor != "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {name}")
    yield {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "NEXUS_TEST_DB_NAME": name,
        "PYTHONPATH": str(ROOT),
    }
    if vendor != "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE {name}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # PostgreSQL makes no database inside a transaction
def test_nexus_spark_sync__unmigrated_database(unmigrated_env: dict[str, str], tmp_path: Path) -> None:
    """An unmigrated database is one clear line naming the missing tables and the fix, before Spark starts."""
    path = write_inventory(tmp_path / "in.parquet", [1])

    done = run_command(unmigrated_env, "--queue", "inventory", "--input", str(path))

    assert done.returncode == 1
    tables = f"{Inventory.queue_model._meta.db_table}, {Sync._meta.db_table}"
    assert done.stderr.strip().splitlines() == [
        f"CommandError: Database 'default' is not migrated: it has no table {tables}. Run manage.py migrate."
    ]
