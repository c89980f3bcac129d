"""Spark sync and read of a queue beside Spark's own JDBC writer and reader, on two data sets: the targets of the
catalogue sync in Spark's engine as ratios, from one run.

Make the inputs (the orders are the benchmarks' own data set: nested, constrained, not the demo's)::

    .venv/bin/python -m tests.benchmarks.orders.data --rows 200000 --output /tmp/orders
    mkdir -p /tmp/products
    .venv/bin/python manage.py nexus_demo_catalogue --products 200000 --today 2026-11-23 \\
        --output /tmp/products/products.parquet
    .venv/bin/python manage.py nexus_demo_catalogue --products 200000 --today 2026-11-23 --change 1 \\
        --output /tmp/products/products_changed.parquet

then (PostgreSQL; ``mysql://root@127.0.0.1:3306/nq_bench_sync`` for MariaDB)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench_sync \\
        .venv/bin/python tests/benchmarks/bench_spark_sync.py --orders /tmp/orders --products /tmp/products --rounds 2

Creates and afterwards drops the test database ``test_<name>``. One SparkSession (``local[2]``, UI off, the
engine's JDBC driver from Debian's package) reads each input once into a cached DataFrame; a 1,000-row sync first
starts what a session starts once. Each round measures, in turn, for each data set:

  first_sync   ``sync(df, MessageClass)`` into an empty queue (the path it took printed beside it)
  unchanged    the same DataFrame again: nothing written
  changed_1pct the input with every hundredth row changed: exactly those rewritten
  jdbc         ``df.write.jdbc`` of (id, ``to_json`` of the other columns) into ``(id primary key, message jsonb)``
               (MariaDB: ``json``), batchsize 10000, the driver's batched inserts rewritten (the sync's own JDBC
               properties)
  jdbc_queue_copy  the same into a copy of the queue's table with all its indexes (no target: like for like)
  read         ``read(spark, MessageClass)`` of the id and the message's fields (Spark asks the database for no other
               column), every row and column made (a hash of all summed) and counted; each read runs once untimed
               first (the first read of the round paid the warming of the JVM's code for all three)
  read_jdbc    ``spark.read.jdbc`` of the queue table's id and message text, partitioned on id, the same way
  read_jdbc_parsed  the same with the message's fields parsed by ``from_json`` with the class's Spark schema, as
               a user of ``spark.read.jdbc`` would to get the fields (no target: printed to compare)
  sync_1/2     a first sync in a process of its own on ``local[1]`` and on ``local[2]`` (the sync call's seconds)
  compiled_1/2 in the same process, Spark's part alone: every row validated, written and hashed by the compiled
               class, into Spark's ``noop`` sink (no database work)

Ratios are of rates (rows a second): above 1 the sync is the faster.
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings_spark")

import django

django.setup()

from django.db import connection  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

from demo_project.shop.queues import ProductUpdated  # noqa: E402
from nexus_queues.backends import backend_for  # noqa: E402
from nexus_queues.contrib.spark import read, session, sync  # noqa: E402
from nexus_queues.contrib.spark.codegen import jit_sized_methods  # noqa: E402
from nexus_queues.contrib.spark.compiling import select_staged  # noqa: E402
from nexus_queues.contrib.spark.jdbc import connection as jdbc_connection  # noqa: E402
from nexus_queues.contrib.spark.models import Sync  # noqa: E402
from nexus_queues.contrib.spark.schema import spark_schema  # noqa: E402
from nexus_queues.messages import QueueMessage  # noqa: E402
from nexus_queues.status import Status  # noqa: E402
from tests.benchmarks.bench_spark import load, sql, timed  # noqa: E402
from tests.benchmarks.bench_spark_read import made  # noqa: E402
from tests.benchmarks.databases import bench_databases  # noqa: E402
from tests.benchmarks.orders.queues import OrderPlaced  # noqa: E402

DATA_SETS: dict[str, tuple[type[QueueMessage], str]] = {"orders": (OrderPlaced, "order_id"),
                                                        "products": (ProductUpdated, "sku")}  # fmt: skip
"""A data set's message class and its id column; its files are ``<folder>/<name>.parquet`` and ``..._changed``."""
KEYED = "bench_keyed"
QUEUE_COPY = "bench_queue_copy"
TARGETS = (
    ("first_sync / jdbc", "jdbc", "first_sync", 0.6),
    ("unchanged / jdbc", "jdbc", "unchanged", 1.5),
    ("changed_1pct / jdbc", "jdbc", "changed_1pct", 1.2),
    ("read / read_jdbc", "read_jdbc", "read", 1.0),
    ("sync local[2] / local[1]", "sync_1", "sync_2", 1.6),
)
"""Each target: its label, the seconds of the yardstick and of the measure (the ratio of rates), the bound."""


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in DATA_SETS:
        parser.add_argument(f"--{name}", type=Path, help=f"The folder of {name}.parquet and {name}_changed.parquet.")
    parser.add_argument("--rounds", type=int, default=2, help="Runs of the whole set, in turn (median).")
    parser.add_argument("--partitions", type=int, default=4, help="Partitions of the cached DataFrames.")
    parser.add_argument("--one-sync", nargs=2, metavar=("DATA_SET", "MASTER"), help=argparse.SUPPRESS)
    return parser.parse_args()


def empty(message_class: type[QueueMessage]) -> None:
    sql(f"DELETE FROM {message_class.queue_model._meta.db_table}")


def path_taken() -> str:
    """The path the last sync took, as its record says (``?`` before the record had one)."""
    record = Sync.objects.order_by("-pk").first()
    return str(getattr(record, "path", "?") or "?")


def syncs(message_class: type[QueueMessage], df: DataFrame, changed: DataFrame, rows: int) -> dict[str, float]:
    """First sync, unchanged re-sync and 1% changed, each checked by its counts; their seconds."""
    empty(message_class)
    first, counts = timed(lambda: sync(df, message_class))
    assert counts.new == rows, counts
    print(f"    first sync took the {path_taken()} path", flush=True)
    again, counts = timed(lambda: sync(df, message_class))
    assert (counts.new, counts.changed, counts.unchanged) == (0, 0, rows), counts
    change, counts = timed(lambda: sync(changed, message_class))
    assert (counts.new, counts.changed) == (0, len(range(0, rows, 100))), counts
    return {"first_sync": first, "unchanged": again, "changed_1pct": change}


def jdbc_write(df: DataFrame, id_column: str, rows: int) -> float:
    """``df.write.jdbc`` of (id, JSON of the rest) into the keyed table: its seconds."""
    flat = df.select(F.col(id_column).alias("id"),
                     F.to_json(F.struct(*[c for c in df.columns if c != id_column])).alias("message"))  # fmt: skip
    return timed_jdbc_write(flat, KEYED, rows)


def jdbc_queue_copy(df: DataFrame, message_class: type[QueueMessage], id_column: str, rows: int) -> float:
    """``df.write.jdbc`` into a copy of the queue's table with all its indexes: the id, the JSON of the rest and its
    hash, Pending, as Spark's own writer stores messages without the sync's checks, canonical JSON, all or nothing or
    comparison (no target: what the queue's indexes cost any writer). Its seconds."""
    message = F.to_json(F.struct(*[c for c in df.columns if c != id_column]))
    now = F.current_timestamp()
    flat = df.select(F.col(id_column).alias("message_id"), message.alias("message"),
                     F.sha2(message, 256).alias("message_hash"), F.lit("{}").alias("headers"),
                     F.lit(Status.PENDING.value).alias("status"),
                     now.alias("created_at"), now.alias("updated_at"))  # fmt: skip
    table = message_class.queue_model._meta.db_table
    sql(f"CREATE TABLE {QUEUE_COPY} " + (f"(LIKE {table} INCLUDING ALL)" if connection.vendor == "postgresql"
                                          else f"LIKE {table}"))  # fmt: skip
    try:
        return timed_jdbc_write(flat, QUEUE_COPY, rows)
    finally:
        sql(f"DROP TABLE {QUEUE_COPY}")


def timed_jdbc_write(flat: DataFrame, table: str, rows: int) -> float:
    """``flat.write.jdbc`` into ``table``, emptied first, batchsize 10000 with the sync's JDBC properties (batched
    inserts rewritten); checked by its count. Its seconds."""
    jdbc = jdbc_connection("default")
    sql(f"DELETE FROM {table}")
    seconds, _ = timed(lambda: flat.write.jdbc(jdbc.url, table, mode="append",
                                               properties={**jdbc.properties, "batchsize": "10000"}))  # fmt: skip
    assert sql(f"SELECT count(*) FROM {table}")[0][0] == rows
    return seconds


def reads(spark: SparkSession, message_class: type[QueueMessage], rows: int, partitions: int) -> dict[str, float]:
    """The queue read by :func:`read` and by ``spark.read.jdbc`` of its raw JSON, each made and counted: seconds."""
    table = message_class.queue_model._meta.db_table
    first, last = sql(f"SELECT min(id), max(id) FROM {table}")[0]
    jdbc = jdbc_connection("default")
    raw = spark.read.jdbc(jdbc.url, table, column="id", lowerBound=first, upperBound=last, numPartitions=partitions,
                          properties={**jdbc.properties, "fetchsize": "2000"}).select("id", "message")  # fmt: skip
    fields = StructType([f for f in spark_schema(message_class).fields if f.name in message_class.model_fields])
    parsed = raw.select("id", F.from_json("message", fields, {"timeZone": "UTC"}).alias("m")).select("id", "m.*")
    found = {}
    ours = read(spark, message_class).select("id", *fields.fieldNames())  # the columns of the like-for-like read
    for name, df in (("read", ours), ("read_jdbc", raw), ("read_jdbc_parsed", parsed)):
        made(df)()  # once untimed: the first read of a session compiles and warms what the later ones use
        found[name], counted = timed(made(df))
        assert counted == rows, (name, counted)
    return found


def spark_session(master: str) -> SparkSession:
    jars = backend_for("default").jdbc_driver.jar  # Debian's jar of the engine's driver
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "3g",
            "spark.sql.session.timeZone": "UTC", "spark.jars": jars}  # fmt: skip
    spark = session(master, **conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def frames(spark: SparkSession, folder: Path, name: str, partitions: int) -> tuple[DataFrame, DataFrame]:
    """The data set's input and its changed input, each cached in ``partitions`` partitions."""
    found = []
    for path in (folder / f"{name}.parquet", folder / f"{name}_changed.parquet"):
        df = spark.read.parquet(str(path)).repartition(partitions).cache()
        df.count()
        found.append(df)
    return found[0], found[1]


def one_sync_elsewhere(name: str, folder: Path, master: str, partitions: int) -> tuple[float, float]:
    """A first sync's seconds in a process of its own on ``master`` (this test database, kept), and those of
    Spark's part alone (the compiled rows into Spark's ``noop`` sink)."""
    command = [sys.executable, __file__, f"--{name}", str(folder), "--partitions", str(partitions),
               "--one-sync", name, master]  # fmt: skip
    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
    done = subprocess.run(command, env={**os.environ, "DATABASE_URL": url}, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    sync_seconds, compiled_seconds = done.stdout.strip().splitlines()[-1].split()
    return float(sync_seconds), float(compiled_seconds)


def one_sync(args: argparse.Namespace) -> None:
    """The process of :func:`one_sync_elsewhere`: print the seconds of a first sync of its data set, then of its
    compiled rows alone."""
    name, master = args.one_sync
    message_class, _ = DATA_SETS[name]
    spark = spark_session(master)
    df, _ = frames(spark, getattr(args, name), name, args.partitions)
    empty(message_class)
    sync(df.limit(1000), message_class)
    empty(message_class)
    seconds, _ = timed(lambda: sync(df, message_class))
    empty(message_class)
    staged = select_staged(df, message_class)  # Spark's part alone: every row validated, written and hashed
    with jit_sized_methods(spark):
        staged.write.format("noop").mode("overwrite").save()  # the generated code compiled once, as in the sync
        compiled, _ = timed(lambda: staged.write.format("noop").mode("overwrite").save())
    spark.stop()
    print(seconds, compiled)


def summary(name: str, runs: list[dict[str, float]], rows: int) -> None:
    medians = {measure: statistics.median(run[measure] for run in runs) for measure in runs[0]}
    print(f"\n{name}: {rows} rows ({len(runs)} rounds, medians; {load()})")
    for measure, seconds in medians.items():
        print(f"  {measure:14s} {rows / seconds:10.0f} rows/s  {seconds:7.2f} s")
    for label, yardstick, measure, target in TARGETS:
        ratio = medians[yardstick] / medians[measure]
        print(f"  {label:28s} {ratio:5.2f}  target >= {target}  {'met' if ratio >= target else 'NOT met'}")
    for label, yardstick, measure, note in (
        ("read / read_jdbc_parsed", "read_jdbc_parsed", "read", "like for like"),
        ("first_sync / jdbc_queue_copy", "jdbc_queue_copy", "first_sync", "like for like"),
        ("compiled local[2] / local[1]", "compiled_1", "compiled_2", "Spark's part alone"),
    ):
        print(f"  {label:28s} {medians[yardstick] / medians[measure]:5.2f}  ({note})")


def main(args: argparse.Namespace) -> None:
    given = {name: folder for name in DATA_SETS if (folder := getattr(args, name))}
    if not given:
        sys.exit("Name a data set's folder: --orders or --products.")
    quoted = connection.ops.quote_name
    id_type, json_type = ("text", "jsonb") if connection.vendor == "postgresql" else ("varchar(255)", "json")
    sql(f"CREATE TABLE {KEYED} ({quoted('id')} {id_type} PRIMARY KEY, message {json_type})")
    spark = spark_session("local[2]")
    inputs = {name: frames(spark, folder, name, args.partitions) for name, folder in given.items()}
    print(f"{connection.vendor}, local[2], {args.partitions} partitions; {load()}", flush=True)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in given}
    for name, (df, _) in inputs.items():
        sync(df.limit(1000), DATA_SETS[name][0])  # what a session starts once (Spark's Python workers, Django)
    for round_number in range(args.rounds):
        for name, (df, changed) in inputs.items():
            message_class, id_column = DATA_SETS[name]
            rows = df.count()
            print(f"  round {round_number + 1}, {name}:", flush=True)
            seconds = syncs(message_class, df, changed, rows)
            seconds |= reads(spark, message_class, rows, args.partitions)
            seconds["jdbc"] = jdbc_write(df, id_column, rows)
            seconds["jdbc_queue_copy"] = jdbc_queue_copy(df, message_class, id_column, rows)
            empty(message_class)
            for cores in (1, 2):
                seconds[f"sync_{cores}"], seconds[f"compiled_{cores}"] = one_sync_elsewhere(
                    name, given[name], f"local[{cores}]", args.partitions
                )
            print("    " + ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items()) + f"; {load()}", flush=True)
            results[name].append(seconds)
    for name, runs in results.items():
        summary(name, runs, inputs[name][0].count())
    spark.stop()


if __name__ == "__main__":
    options = arguments()
    if options.one_sync:
        one_sync(options)
        sys.exit()
    with bench_databases():
        main(options)
