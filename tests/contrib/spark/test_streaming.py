"""Structured Streaming into a queue: each micro-batch merged once, even when Spark replays it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.db import connection
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from nexus_queues.contrib.spark.models import Sync
from nexus_queues.staging import STREAM_PREFIX
from tests.testapp.apps import SIGNALLED_STREAM
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db(transaction=True)


def add_file(folder: Path, name: str, names: list[str]) -> None:
    folder.mkdir(exist_ok=True)
    table = pa.table(
        {"name": names, "times": list(range(len(names)))},
        schema=pa.schema([("name", pa.string()), ("times", pa.int64())]),
    )
    pq.write_table(table, folder / name)


def start_stream(
    spark: SparkSession, source: Path, checkpoint: Path, files_per_batch: int = 1000, **options: str
) -> StreamingQuery:
    """Start the stream over what the folder holds now, ``files_per_batch`` a micro-batch; it stops when done."""
    df = spark.readStream.schema("name string, times long").option("maxFilesPerTrigger", files_per_batch)
    df = df.parquet(str(source))
    writer = df.writeStream.format("nexus").option("queue", "greetings")
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()


def run_stream(
    spark: SparkSession, source: Path, checkpoint: Path, files_per_batch: int = 1000, **options: str
) -> None:
    """Run the stream over what the folder holds now, then stop."""
    query = start_stream(spark, source, checkpoint, files_per_batch, **options)
    query.awaitTermination()
    assert query.exception() is None


def test_stream__batches_stored_once_even_when_replayed(spark: SparkSession, tmp_path: Path) -> None:
    """Each micro-batch is stored once and recorded; a batch Spark runs again after a crash stores nothing twice."""
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    add_file(source, "a.parquet", ["a1", "a2", "a3"])
    run_stream(spark, source, checkpoint)
    assert sorted(i.message.name for i in Greeting.queue_items()) == ["a1", "a2", "a3"]

    # A crash after the merge but before Spark noted the batch done: Spark runs batch 0 again on restart.
    for done in ("0", ".0.crc"):
        (checkpoint / "commits" / done).unlink()
    run_stream(spark, source, checkpoint)
    assert Greeting.queue_items().count() == 3

    add_file(source, "b.parquet", ["b1"])
    run_stream(spark, source, checkpoint)

    assert sorted(i.message.name for i in Greeting.queue_items()) == ["a1", "a2", "a3", "b1"]
    assert list(Sync.objects.order_by("batch_id").values_list("stream", "batch_id", "new", "replays")) == [
        ("greetings", 0, 3, 1),
        ("greetings", 1, 1, 0),
    ]
    staged = [t for t in connection.introspection.table_names() if t.startswith(STREAM_PREFIX)]
    assert len(staged) == 1
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(staged[0])}")
        assert cursor.fetchone()[0] == 0


def test_stream__each_stored_batch_sends_synced(spark: SparkSession, tmp_path: Path) -> None:
    """Each micro-batch merged sends ``synced`` once, to receivers connected in ready(); a replay sends none."""
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    add_file(source, "a.parquet", ["a1", "a2"])
    run_stream(spark, source, checkpoint, stream=SIGNALLED_STREAM)
    for done in ("0", ".0.crc"):
        (checkpoint / "commits" / done).unlink()
    run_stream(spark, source, checkpoint, stream=SIGNALLED_STREAM)
    add_file(source, "b.parquet", ["b1"])
    run_stream(spark, source, checkpoint, stream=SIGNALLED_STREAM)

    batches = list(Sync.objects.filter(stream=SIGNALLED_STREAM).order_by("batch_id").values_list("pk", flat=True))
    assert len(batches) == 2
    assert sorted(item.message.n for item in Ping.queue_items()) == batches


def test_stream__new_checkpoint_under_a_used_name_fails_naming_the_option(spark: SparkSession, tmp_path: Path) -> None:
    """A stream restarted from a new checkpoint under a name whose batches are recorded fails, naming the
    ``stream`` option, and stores nothing; under a new name it then stores every row."""
    source = tmp_path / "in"
    add_file(source, "a.parquet", ["a1", "a2"])
    add_file(source, "b.parquet", ["b1"])
    run_stream(spark, source, tmp_path / "checkpoint", files_per_batch=1)
    add_file(source, "c.parquet", ["c1", "c2"])

    query = start_stream(spark, source, tmp_path / "new-checkpoint", files_per_batch=1)
    with pytest.raises(StreamingQueryException, match=r'\.option\("stream", '):
        query.awaitTermination()
    assert Greeting.queue_items().count() == 3

    run_stream(spark, source, tmp_path / "new-checkpoint", stream="greetings-2")
    assert sorted(i.message.name for i in Greeting.queue_items()) == ["a1", "a1", "a2", "a2", "b1", "b1", "c1", "c2"]


def test_stream__new_checkpoint_fails_even_when_the_name_has_one_batch(spark: SparkSession, tmp_path: Path) -> None:
    """A new checkpoint's batch 0 is not mistaken for a replay of the batch 0 another checkpoint recorded."""
    source = tmp_path / "in"
    add_file(source, "a.parquet", ["a1"])
    run_stream(spark, source, tmp_path / "checkpoint")
    add_file(source, "b.parquet", ["b1"])

    query = start_stream(spark, source, tmp_path / "new-checkpoint")
    with pytest.raises(StreamingQueryException, match="new checkpoint"):
        query.awaitTermination()
    assert [i.message.name for i in Greeting.queue_items()] == ["a1"]
