"""The JVM path of a sync: chosen where it can run and recorded with why, storing what the Python path stores."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from django.db import connections
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from nexus_queues import enqueue, staging
from nexus_queues.contrib.spark import SyncCounts, SyncFailed, jvm_staging, merging, sync
from nexus_queues.contrib.spark.jvm_staging import stage_in_jvm
from nexus_queues.contrib.spark.models import Sync
from nexus_queues.contrib.spark.options import write_options
from nexus_queues.contrib.spark.routes import choose
from nexus_queues.serialization import canonical_json, json_hash
from tests.testapp.queues import Arrival, Audit, Greeting, Inventory

pytestmark = pytest.mark.django_db(transaction=True)
JVM = pytest.mark.engines("postgresql", "mysql")
ARRIVAL = "arrival_id string, n int"


def arrivals(frame: Any, count: int, *, changed: int = 0, nulls: tuple[int, ...] = ()) -> DataFrame:
    rows = [(f"A-{i}", None if i in nulls else i + (1000 if i < changed else 0)) for i in range(count)]
    return frame(rows, ARRIVAL)


def stored(message_class: Any) -> list[tuple[Any, ...]]:
    rows = message_class.queue_items().order_by("id")
    return [(r.message_id, r.message.model_dump(), r.message_hash, r.status) for r in rows]


@pytest.fixture(params=["where_they_are", "by_shuffle", "repeats_by_shuffle"])
def comparison(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way a sync compares rows with the stored pairs: the pairs sent to every task (a small queue), the two
    sides shuffled by id (a queue over BROADCAST_PAIRS rows), and so too when many ids come in several rows."""
    if request.param == "by_shuffle":
        monkeypatch.setattr(jvm_staging, "BROADCAST_PAIRS", 0)
    if request.param == "repeats_by_shuffle":
        monkeypatch.setattr(jvm_staging, "REPEATS_KEPT", 0)
    return str(request.param)


def staging_tables() -> list[str]:
    return [t for t in connections["default"].introspection.table_names() if t.startswith(staging.PREFIX)]


@JVM
def test_sync__jvm_path_recorded_and_logged(frame: Any, jdbc: Any, caplog: pytest.LogCaptureFixture) -> None:
    """A class that compiles, on a database Spark reaches: the JVM path, said in the record and one log line."""
    with caplog.at_level(logging.INFO, logger="nexus_queues.spark"):
        counts = sync(arrivals(frame, 5), Arrival)

    record = Sync.objects.get()
    assert (record.path, counts.new) == (Sync.Path.JVM, 5)
    assert "compiles to column expressions" in record.path_reason
    said = [r for r in caplog.records if getattr(r, "action", "") == "spark_sync_path"]
    told = f"Sync #{record.pk} into arrivals takes the JVM path: {record.path_reason}"
    assert [r.getMessage() for r in said] == [told]


SAME_ROWS = {
    Arrival: ("arrival_id string, n int", lambda i, version: (f"K-{i % 40}", i * version % 7)),
    Inventory: ("sku string, quantity int", lambda i, version: (f"K-{i % 40}", i * version % 7)),
    Greeting: ("name string, times int", lambda i, version: (f"K-{i % 40}", i * version % 7)),
}


@JVM
@pytest.mark.parametrize("message_class", list(SAME_ROWS), ids=["idempotent", "identity", "appended"])
def test_sync__both_paths_store_the_same_rows(spark: SparkSession, jdbc: Any, message_class: Any) -> None:
    """The same DataFrames (ids repeated, synced again, then changed) synced by each path leave the same rows
    (message, hash, status) and the same counts."""
    schema, row = SAME_ROWS[message_class]

    def rows(version: int) -> DataFrame:
        return spark.createDataFrame([row(i, version) for i in range(60)], schema).repartition(3)

    found = {}
    for jvm in (False, True):
        message_class.queue_items().delete()
        counts = [dataclasses.replace(sync(rows(version), message_class, jvm=jvm), batch=None) for version in (1, 1, 2)]
        found[jvm] = (counts, stored(message_class))
        assert Sync.objects.order_by("-pk")[0].path == (Sync.Path.JVM if jvm else Sync.Path.PYTHON)

    assert found[True] == found[False]


@JVM
def test_sync__rejects_with_positions_on_the_jvm_path(spark: SparkSession, jdbc: Any, tmp_path: Path) -> None:
    """Rejects are written with the row's number in the DataFrame, its partition and its values, as the Python path
    writes them (the reason's text may differ)."""
    df = spark.createDataFrame([(f"A-{i}", None if i % 4 == 1 else i) for i in range(10)], ARRIVAL).repartition(3)
    df = df.cache()
    python, jvm = tmp_path / "python.jsonl", tmp_path / "jvm.jsonl"

    by_python = sync(df, Arrival, rejects=str(python), jvm=False)
    Arrival.queue_items().delete()
    by_jvm = sync(df, Arrival, rejects=str(jvm))

    assert Sync.objects.order_by("-pk")[0].path == Sync.Path.JVM
    assert (by_jvm.rejected, by_jvm.new) == (by_python.rejected, by_python.new) == (3, 7)

    def rejects(path: Path) -> list[tuple[Any, ...]]:
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        return [(r["position"], r["partition"], r["row"], [e["field"] for e in r["errors"]]) for r in lines]

    assert rejects(jvm) == rejects(python)
    assert [r[2]["n"] for r in rejects(jvm)] == [None, None, None]


@JVM
def test_sync__too_many_rejects_on_the_jvm_path(spark: SparkSession, jdbc: Any) -> None:
    """Beyond max_rejects the sync fails naming the first reject by its position; nothing is stored."""
    df = spark.createDataFrame([("A-0", 0), ("A-1", None), ("A-2", 2)], ARRIVAL).coalesce(1)

    with pytest.raises(SyncFailed, match=r'more than max_rejects \(0\).*"position": 1, "partition": 0'):
        sync(df, Arrival)

    assert Arrival.queue_items().count() == 0
    assert staging_tables() == []


@JVM
def test_sync__unchanged_rows_counted_in_spark(
    frame: Any, jdbc: Any, caplog: pytest.LogCaptureFixture, comparison: str
) -> None:
    """Syncing again stages only new and changed rows: the unchanged ones are counted by Spark."""
    sync(arrivals(frame, 20), Arrival)

    with caplog.at_level(logging.INFO, logger="nexus_queues.spark"):
        counts = sync(arrivals(frame, 25, changed=3), Arrival)

    assert (counts.new, counts.changed, counts.unchanged, counts.superseded) == (5, 3, 17, 0)
    staged = [r.getMessage() for r in caplog.records if getattr(r, "action", "") == "spark_staged"]
    assert "(0 rejected; 17 unchanged and 0 older rows of their ids left in Spark)" in staged[-1]
    assert Arrival.queue_items().get(message_id="A-1").message.n == 1001


@JVM
def test_sync__a_row_that_is_the_stored_message_is_unchanged_checked_or_not(spark: SparkSession, jdbc: Any) -> None:
    """Rows are compared with the stored messages before they are checked: a row whose id and JSON the queue holds
    is unchanged though its checks would refuse it (here a message stored before its class required ``n``); a
    row that differs is checked and refused."""
    sync(spark.createDataFrame([("A", 1), ("B", 2)], ARRIVAL), Arrival)
    held = canonical_json({"arrival_id": "A", "n": None})
    Arrival.queue_items().filter(message_id="A").update(message=json.loads(held), message_hash=json_hash(held))

    counts = sync(spark.createDataFrame([("A", None), ("B", None)], ARRIVAL), Arrival, max_rejects=1)

    assert (counts.unchanged, counts.rejected, counts.changed) == (1, 1, 0)
    assert Arrival.queue_items().get(message_id="B").message.n == 2


@JVM
def test_sync__an_id_twice_the_last_row_decides(spark: SparkSession, jdbc: Any, comparison: str) -> None:
    """An id given twice: the later row is the one compared and stored, as on the Python path; an id whose later row
    is stored is unchanged though its earlier row differs, and its earlier row is counted superseded."""
    sync(spark.createDataFrame([("A", 1), ("B", 1)], ARRIVAL), Arrival)
    df = spark.createDataFrame([("A", 5), ("A", 1), ("B", 1), ("B", 6)], ARRIVAL).coalesce(1)

    by_jvm = sync(df, Arrival)

    assert (by_jvm.changed, by_jvm.unchanged, by_jvm.superseded) == (1, 1, 2)
    assert sorted((r.message_id, r.message.n) for r in Arrival.queue_items()) == [("A", 1), ("B", 6)]


@JVM
def test_sync__non_idempotent_queue_stores_unchanged_rows_again(frame: Any, jdbc: Any) -> None:
    """A queue that is not idempotent stores an unchanged row again: no row is left in Spark, the merge counts it."""
    sync(frame([("S-1", 1), ("S-2", 2)], "sku string, quantity int"), Inventory)
    first = Inventory.queue_items().get(message_id="S-1").pk

    counts = sync(frame([("S-1", 1), ("S-2", 3)], "sku string, quantity int"), Inventory)

    assert (counts.changed, counts.unchanged) == (1, 1)
    assert Sync.objects.order_by("-pk")[0].path == Sync.Path.JVM
    assert Inventory.queue_items().get(message_id="S-1").pk == first


@JVM
def test_sync__a_task_run_twice_stores_its_rows_once(spark: SparkSession, jdbc: Any) -> None:
    """Rows a task wrote twice (a retry after its commit, speculation) share their token and position: the copies
    are dropped before the merge, even on a queue without identity, which would store them twice."""
    df = spark.createDataFrame([(f"hello {i}", i) for i in range(30)], "name string, times int").repartition(2)
    route = choose(df, Greeting)
    assert route.path == Sync.Path.JVM and route.jdbc is not None
    record = Sync.objects.create(queue=Greeting.queue_name())
    options = write_options({"queue": Greeting.queue_name(), "sync": str(record.pk)})
    table, _ = merging.begin(options)
    token = staging.new_token()

    for _ in range(2):
        staged = stage_in_jvm(df, Greeting, route.jdbc, table, token, skip_unchanged=False)
    assert staging.staging_model(table)._default_manager.count() == 60
    merging.commit(options, table, record.pk, merging.Merge([token], staged.rejected, dict, written=staged.written))

    record.refresh_from_db()
    assert (record.state, record.new) == (Sync.State.STORED, 30)
    assert sorted(i.message.times for i in Greeting.queue_items()) == list(range(30))
    assert staging_tables() == []


@JVM
def test_sync__failed_jdbc_write_stores_nothing(spark: SparkSession, jdbc: Any) -> None:
    """A Spark job failing while it stages: the record fails with the reason, the staging table is dropped."""
    enqueue(Arrival(arrival_id="A-0", n=-1))
    failing = F.when(F.col("id") == 90, F.raise_error(F.lit("row 90 failed")))
    df = spark.range(100).select(
        F.concat(F.lit("A-"), F.col("id").cast("string")).alias("arrival_id"),
        failing.otherwise(F.col("id").cast("int")).alias("n"),
    )

    with pytest.raises(SyncFailed, match="row 90 failed"):
        sync(df, Arrival)

    record = Sync.objects.get()
    assert (record.path, record.state) == (Sync.Path.JVM, Sync.State.FAILED)
    assert "row 90 failed" in record.error
    assert [(i.message_id, i.message.n) for i in Arrival.queue_items()] == [("A-0", -1)]
    assert staging_tables() == []


@JVM
def test_sync__message_enqueued_before_the_merge_is_kept(
    frame: Any, jdbc: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A row Spark counted unchanged, whose id is enqueued anew (other JSON) after Spark read the stored hashes and
    before the merge: the sync stages nothing for it, so the newer message stays, and the row counts unchanged."""
    sync(arrivals(frame, 3), Arrival)

    class EnqueueWhenStaged(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, "action", "") == "spark_staged":
                enqueue(Arrival(arrival_id="A-1", n=77))

    hook = EnqueueWhenStaged()
    logging.getLogger("nexus_queues.spark").addHandler(hook)
    try:
        with caplog.at_level(logging.INFO, logger="nexus_queues.spark"):
            counts = sync(arrivals(frame, 3), Arrival)
    finally:
        logging.getLogger("nexus_queues.spark").removeHandler(hook)

    assert (counts.new, counts.changed, counts.unchanged) == (0, 0, 3)
    assert Arrival.queue_items().get(message_id="A-1").message.n == 77


@JVM
def test_sync__changed_row_enqueued_the_same_before_the_merge(
    frame: Any, jdbc: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A changed row whose new JSON is enqueued after Spark staged it: the merge's guard finds it stored and counts
    it unchanged, as the Python path does."""
    sync(arrivals(frame, 3), Arrival)

    class EnqueueWhenStaged(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, "action", "") == "spark_staged":
                enqueue(Arrival(arrival_id="A-0", n=1000))

    hook = EnqueueWhenStaged()
    logging.getLogger("nexus_queues.spark").addHandler(hook)
    try:
        with caplog.at_level(logging.INFO, logger="nexus_queues.spark"):
            counts = sync(arrivals(frame, 3, changed=1), Arrival)
    finally:
        logging.getLogger("nexus_queues.spark").removeHandler(hook)

    assert (counts.changed, counts.unchanged) == (0, 3)


@JVM
def test_sync__class_outside_the_supported_set_takes_the_python_path(frame: Any, jdbc: Any) -> None:
    """A class that does not compile is synced by the Python path; its record says why."""
    counts = sync(frame([("started", 1.5)], "event string, duration double"), Audit)

    record = Sync.objects.get()
    assert (record.path, counts.new) == (Sync.Path.PYTHON, 1)
    assert "duration" in record.path_reason


@JVM
def test_sync__a_headers_column_takes_the_python_path(frame: Any, jdbc: Any) -> None:
    """A headers column (the one placement column that does not compile) takes the Python path, saying so."""
    sync(frame([("S-1", 1, {"trace": "t1"})], "sku string, quantity int, headers map<string, string>"), Inventory)

    record = Sync.objects.get()
    assert record.path == Sync.Path.PYTHON
    assert "headers" in record.path_reason


@pytest.mark.engines("sqlite")
def test_sync__sqlite_takes_the_python_path(frame: Any) -> None:
    """On SQLite the record says the JVM cannot reach the database."""
    counts = sync(arrivals(frame, 3), Arrival)

    record = Sync.objects.get()
    assert (record.path, counts.new) == (Sync.Path.PYTHON, 3)
    assert "SQLite" in record.path_reason


@JVM
def test_sync__jvm_false_keeps_the_python_path(frame: Any, jdbc: Any) -> None:
    """jvm=False asks for the Python path, and the record says so."""
    counts = sync(arrivals(frame, 2), Arrival, jvm=False)

    assert counts == SyncCounts(2, 0, 0, 0, 0, 0, Sync.objects.get().queue_batch_id)
    assert Sync.objects.get().path_reason == "The caller asked for the Python path (jvm=False)."
