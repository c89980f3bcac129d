"""Spark's ``nexus`` data source syncing products on PostgreSQL: every target of issue 25 as a ratio, from one run.

Make the two inputs with the demo's command, the second with 1% of the products changed::

    .venv/bin/python manage.py nexus_demo_catalogue --products 1000000 --today 2026-11-23 --output /tmp/products.parquet
    .venv/bin/python manage.py nexus_demo_catalogue --products 1000000 --today 2026-11-23 --change 1 \\
        --output /tmp/products_changed.parquet

then::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench_spark .venv/bin/python tests/benchmarks/bench_spark.py \\
        --input /tmp/products.parquet --changed-input /tmp/products_changed.parquet

Creates and afterwards drops the test database ``test_<name>``. Before the rounds a 1,000-row sync starts
Spark's Python workers and Django in them (Spark keeps them between tasks), as the JVM that the JDBC
writer runs in is started: a session's first sync pays that once, a few seconds. One SparkSession (``local[2]``, UI off)
reads each input once into a cached DataFrame of ``--partitions`` partitions, so that every writer
below starts from the same rows in memory. The whole set runs ``--rounds`` times in turn (so a change in
the machine's load falls on all of them), first with the demo's trigram search index on the queue
table, then without it; each figure is the median of its rounds:

  first_sync    ``sync(df, ProductUpdated)`` into an empty queue
  unchanged     the same DataFrame again: no queue row may be written (checked by the rows' xmin)
  changed_1pct  the changed input: it rewrites exactly 1% of the rows
  raw_copy      psycopg's COPY of the same rows (sku, the canonical JSON the sync stores) into a plain
                table with a jsonb column, the JSON made beforehand
  jdbc_10000    ``df.write.jdbc`` of sku and ``to_json`` of the other columns into the same kind of table,
                batchsize 10000 with ``reWriteBatchedInserts=true``, Debian's PostgreSQL JDBC driver
  jdbc_queue    the same writer into an empty copy of the queue table (same columns, same indexes, the
                trigram one too when the queue has it): the rows as the queue stores them (message_id, JSON,
                its SHA-256, status, times), unvalidated and with JSON that is not the canonical one. The
                issue's targets compare with ``jdbc_10000``; this is the like-for-like write, printed beside
  staging_2     a sync's work on the executors alone (validate, canonical JSON, COPY into a staging
                table) on ``local[2]``; ``staging_1`` the same in a second process on ``local[1]``
  merge         the merge of those staged rows into the empty queue (one transaction)
  insert_select ``INSERT ... SELECT`` of the same staged rows into an empty copy of the queue table
                with the same indexes: the merge's limit
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings_spark")

import django

django.setup()

import psycopg  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from demo_project.shop.queues import ProductUpdated  # noqa: E402
from nexus_queues import Status, staging  # noqa: E402
from nexus_queues.contrib.spark import SyncCounts, session, sync  # noqa: E402
from nexus_queues.contrib.spark.executors import DjangoSetup  # noqa: E402
from nexus_queues.contrib.spark.options import write_options  # noqa: E402
from nexus_queues.contrib.spark.source import NexusDataSource  # noqa: E402
from nexus_queues.contrib.spark.writing import SyncWriter  # noqa: E402
from nexus_queues.serialization import canonical_json  # noqa: E402
from tests.benchmarks.databases import bench_databases  # noqa: E402

QUEUE = ProductUpdated.queue_model._meta.db_table
PLAIN = "bench_plain_products"
COPY_OF_QUEUE = "bench_queue_copy"
JDBC_QUEUE = "bench_jdbc_queue"
JDBC_JAR = "/usr/share/java/postgresql.jar"
T = TypeVar("T")
TARGETS = (
    ("first_sync / jdbc_10000", lambda r: r["first_sync"] / r["jdbc_10000"], ">=", 1.0),
    ("first_sync / raw_copy", lambda r: r["first_sync"] / r["raw_copy"], ">=", 0.4),
    ("unchanged / jdbc_10000", lambda r: r["unchanged"] / r["jdbc_10000"], ">=", 2.0),
    ("changed_1pct / jdbc_10000", lambda r: r["changed_1pct"] / r["jdbc_10000"], ">=", 1.5),
    ("staging local[2] / local[1]", lambda r: r["staging_2"] / r["staging_1"], ">=", 1.7),
    ("merge time / insert_select time", lambda r: r["merge"] / r["insert_select"], "<=", 1.5),
)
"""The issue's targets: the ratio of rates (the last one of times), the bound it must meet."""
LIKE_FOR_LIKE = (
    ("first_sync / jdbc_queue", lambda r: r["first_sync"] / r["jdbc_queue"]),
    ("unchanged / jdbc_queue", lambda r: r["unchanged"] / r["jdbc_queue"]),
    ("changed_1pct / jdbc_queue", lambda r: r["changed_1pct"] / r["jdbc_queue"]),
)
"""The same rates beside JDBC into a copy of the queue table with its indexes (no target: printed to compare)."""


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="Parquet products (nexus_demo_catalogue).")
    parser.add_argument("--changed-input", help="The same products, 1%% changed (--change 1).")
    parser.add_argument("--rounds", type=int, default=2, help="Runs of the whole set, in turn (median).")
    parser.add_argument("--partitions", type=int, default=4, help="Partitions of the cached DataFrames.")
    parser.add_argument("--jdbc-jar", default=JDBC_JAR, help="libpostgresql-jdbc-java's jar.")
    parser.add_argument("--index", default="with,without", help="Runs with and/or without the trigram index.")
    parser.add_argument("--staging-only", help=argparse.SUPPRESS)  # the local[1] process: its master
    return parser.parse_args()


def sql(statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def next_xid() -> str:
    """The id the next transaction gets: rows it or any later one writes have an xmin at least as young."""
    return str(sql("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")[0][0] % 2**32)


def written_since(xid: str) -> int:
    """How many queue rows were inserted or rewritten since :func:`next_xid` gave ``xid``."""
    return int(sql(f"SELECT count(*) FROM {QUEUE} WHERE age(xmin) <= age(%s::xid)", (xid,))[0][0])


def timed(run: Callable[..., T], *args: object, **kwargs: object) -> tuple[float, T]:
    started = time.perf_counter()
    result = run(*args, **kwargs)
    return time.perf_counter() - started, result


def load() -> str:
    return "load average " + " ".join(f"{n:.1f}" for n in os.getloadavg())


def syncs(df: DataFrame, changed: DataFrame, rows: int) -> dict[str, float]:
    """First sync, unchanged re-sync and 1% change, each checked by what it wrote; their seconds."""
    sql(f"TRUNCATE {QUEUE}")
    xid = next_xid()
    first, counts = timed(sync, df, ProductUpdated)
    assert (counts.new, written_since(xid)) == (rows, rows), counts
    xid = next_xid()
    again, counts = timed(sync, df, ProductUpdated)
    assert counts == SyncCounts(0, 0, rows, 0, 0, 0), counts
    assert written_since(xid) == 0, "the unchanged re-sync rewrote queue rows"
    expected = round(rows / 100)
    xid = next_xid()
    change, counts = timed(sync, changed, ProductUpdated)
    assert (counts.changed, counts.new, written_since(xid)) == (expected, 0, expected), counts
    return {"first_sync": first, "unchanged": again, "changed_1pct": change}


def stage_only(df: DataFrame, table: str) -> tuple[float, list[int]]:
    """What a sync does on the executors (its writer's tasks, no commit) into ``table``: seconds, tokens."""
    staging.drop("default", table)
    staging.create("default", table)
    # A data source whose writer stages as the nexus one does, and whose commit leaves the rows staged.
    writer_class = type("StageOnlyWriter", (SyncWriter,), {"commit": lambda self, messages: None})

    def writer(self: NexusDataSource, schema: object, overwrite: bool) -> SyncWriter:
        return writer_class(write_options(self.options), self.django, table, 0)

    name = classmethod(lambda cls: "nexus_stage_only")
    attributes = {"django": DjangoSetup.of_this_process(), "name": name, "writer": writer}
    df.sparkSession.dataSource.register(type("StageOnlySource", (NexusDataSource,), attributes))
    save = df.write.format("nexus_stage_only").mode("append").option("queue", ProductUpdated.queue_name()).save
    seconds, _ = timed(save)
    return seconds, [int(token) for (token,) in sql(f"SELECT DISTINCT token FROM {table}")]


def merge_and_insert(table: str, tokens: list[int]) -> dict[str, float]:
    """The merge of the staged rows into the empty queue, and INSERT ... SELECT of them into an empty copy."""
    sql(f"TRUNCATE {QUEUE}")
    sql(f"VACUUM ANALYZE {table}")
    with transaction.atomic():
        merge, counts = timed(staging.merge, ProductUpdated, table, tokens, notify=False)
    sql(f"DROP TABLE IF EXISTS {COPY_OF_QUEUE}")
    sql(f"CREATE TABLE {COPY_OF_QUEUE} (LIKE {QUEUE} INCLUDING ALL)")
    columns = "message_id, message, message_hash, headers, status, process_at, expires_at, created_at, updated_at"
    insert = (
        f"INSERT INTO {COPY_OF_QUEUE} ({columns}) SELECT message_id, message::jsonb, message_hash, headers::jsonb, "
        f"COALESCE(status, 'Pending'), process_at, expires_at, now(), now() FROM {table} "
        "WHERE token = ANY(%s) AND reject IS NULL"
    )
    with transaction.atomic():
        insert_select, _ = timed(sql, insert, (tokens,))
    sql(f"DROP TABLE {COPY_OF_QUEUE}")
    assert counts.new == int(sql(f"SELECT count(*) FROM {QUEUE}")[0][0])
    return {"merge": merge, "insert_select": insert_select}


def staging_on_one_core(args: argparse.Namespace) -> float:
    """Seconds :func:`stage_only` takes in a second process on ``local[1]`` (this test database, kept)."""
    params = connection.settings_dict
    url = f"postgres://{params['USER']}@{params['HOST'] or '127.0.0.1'}:{params['PORT'] or 5432}/{params['NAME']}"
    command = [sys.executable, __file__, "--input", args.input, "--partitions", str(args.partitions)]
    done = subprocess.run(
        [*command, "--staging-only", "local[1]"],
        env={**os.environ, "DATABASE_URL": url},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def canonical_rows(path: str) -> list[tuple[str, str]]:
    """The (sku, canonical JSON) pairs the sync stores for the products in ``path``."""
    pairs = []
    for batch in pq.ParquetFile(path).iter_batches(columns=["sku", "name", "prices"]):
        for product in batch.to_pylist():
            message = ProductUpdated.model_validate(product)
            pairs.append((message.sku, canonical_json(message)))
    return pairs


def raw_copy(dsn: str, pairs: list[tuple[str, str]]) -> float:
    """psycopg's COPY of (sku, canonical JSON) into a plain table: its seconds."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {PLAIN}")
        started = time.perf_counter()
        with conn.transaction(), conn.cursor() as cursor, cursor.copy(f"COPY {PLAIN} FROM STDIN") as copy:
            for pair in pairs:
                copy.write_row(pair)
        return time.perf_counter() - started


def jdbc(df: DataFrame, url: str, rows: int) -> float:
    """``df.write.jdbc`` of sku and the other columns as JSON into a plain table: its seconds."""
    flat = df.select("sku", F.to_json(F.struct(*[c for c in df.columns if c != "sku"])).alias("message"))
    properties = {"driver": "org.postgresql.Driver", "batchsize": "10000"}
    sql(f"TRUNCATE {PLAIN}")
    seconds = timed(flat.write.jdbc, url + "&reWriteBatchedInserts=true", PLAIN, mode="append", properties=properties)
    assert sql(f"SELECT count(*) FROM {PLAIN}")[0][0] == rows
    return seconds[0]


def jdbc_queue(df: DataFrame, url: str, rows: int) -> float:
    """``df.write.jdbc`` of the rows as the queue stores them into an empty copy of the queue table: its seconds."""
    message = F.to_json(F.struct(*[c for c in df.columns if c not in ("sku", "process_at")]))
    now = F.current_timestamp()
    status = F.when(F.col("process_at").isNotNull(), Status.SLEEPING.value).otherwise(Status.PENDING.value)
    flat = df.select(F.col("sku").alias("message_id"), message.alias("message"), F.sha2(message, 256).alias(
        "message_hash"), F.lit("{}").alias("headers"), status.alias("status"), "process_at",
        now.alias("created_at"), now.alias("updated_at"))  # fmt: skip
    sql(f"DROP TABLE IF EXISTS {JDBC_QUEUE}")
    sql(f"CREATE TABLE {JDBC_QUEUE} (LIKE {QUEUE} INCLUDING ALL)")
    properties = {"driver": "org.postgresql.Driver", "batchsize": "10000"}
    url += "&reWriteBatchedInserts=true"
    seconds = timed(flat.write.jdbc, url, JDBC_QUEUE, mode="append", properties=properties)
    assert sql(f"SELECT count(*) FROM {JDBC_QUEUE}")[0][0] == rows
    sql(f"DROP TABLE {JDBC_QUEUE}")
    return seconds[0]


def spark_session(master: str, jar: str) -> SparkSession:
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "2g"}
    conf |= {"spark.sql.session.timeZone": "UTC"} | ({"spark.jars": jar} if jar else {})
    spark = session(master, **conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def cached(spark: SparkSession, path: str, partitions: int) -> DataFrame:
    df = spark.read.parquet(path).repartition(partitions).cache()
    df.count()
    return df


def one_round(args: argparse.Namespace, frames: tuple[DataFrame, DataFrame], rows: int, urls: tuple[str, str],
              pairs: list[tuple[str, str]]) -> dict[str, float]:  # fmt: skip
    """Every measure once, as seconds."""
    df, changed = frames
    seconds = syncs(df, changed, rows)
    seconds["raw_copy"] = raw_copy(urls[0], pairs)
    seconds["jdbc_10000"] = jdbc(df, urls[1], rows)
    seconds["jdbc_queue"] = jdbc_queue(df, urls[1], rows)
    seconds["staging_2"], tokens = stage_only(df, "bench_staged")
    seconds |= merge_and_insert("bench_staged", tokens)
    staging.drop("default", "bench_staged")
    seconds["staging_1"] = staging_on_one_core(args)
    print("  round: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()) + f"; {load()}", flush=True)
    return seconds


def summary(title: str, runs: list[dict[str, float]], rows: int) -> None:
    medians = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    rates = {name: rows / s for name, s in medians.items()}
    rates["merge"], rates["insert_select"] = medians["merge"], medians["insert_select"]  # times, not rates
    print(f"\n{title} ({len(runs)} rounds, medians; {load()})")
    for name, median in medians.items():
        print(f"  {name:14s} {rows / median:10.0f} rows/s  {median:7.1f} s")
    for label, ratio, bound, target in TARGETS:
        value = ratio(rates)
        met = value >= target if bound == ">=" else value <= target
        print(f"  {label:32s} {value:5.2f}  target {bound} {target}  {'met' if met else 'NOT met'}")
    other = medians["first_sync"] - medians["staging_2"] - medians["merge"]
    print(f"  first sync's time: staging {medians['staging_2']:.1f} s, merge {medians['merge']:.1f} s, "
          f"the rest (Spark's job, the driver's statements) {other:.1f} s")  # fmt: skip
    print("  like for like, JDBC into a copy of the queue table with its indexes (no target):")
    for label, ratio in LIKE_FOR_LIKE:
        print(f"  {label:32s} {ratio(rates):5.2f}")


def main(args: argparse.Namespace) -> None:
    if not Path(args.jdbc_jar).exists():
        sys.exit(f"Spark's JDBC driver is missing ({args.jdbc_jar}): apt-get install -y libpostgresql-jdbc-java")
    params = connection.settings_dict
    host, port, name = params["HOST"] or "127.0.0.1", params["PORT"] or 5432, params["NAME"]
    dsn = f"host={host} port={port} user={params['USER']} dbname={name}"
    jdbc_url = f"jdbc:postgresql://{host}:{port}/{name}?user={params['USER']}&stringtype=unspecified"
    sql(f"CREATE TABLE {PLAIN} (sku text, message jsonb)")
    print(f"JDBC driver: {args.jdbc_jar}; {load()}", flush=True)
    pairs = canonical_rows(args.input)
    spark = spark_session("local[2]", args.jdbc_jar)
    frames = cached(spark, args.input, args.partitions), cached(spark, args.changed_input, args.partitions)
    rows = frames[0].count()
    sync(frames[0].limit(1000), ProductUpdated)  # Spark's Python workers started, Django set up in them
    sql(f"TRUNCATE {QUEUE}")
    print(f"{rows} products, {args.partitions} partitions, local[2]", flush=True)
    for mode in args.index.split(","):
        if mode == "without":
            found = sql("SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
                        (QUEUE, "%gin_trgm%"))  # fmt: skip
            for (index,) in found:
                sql(f'DROP INDEX "{index}"')
        print(f"\n{mode} the trigram search index:", flush=True)
        runs = [one_round(args, frames, rows, (dsn, jdbc_url), pairs) for _ in range(args.rounds)]
        summary(f"{rows} products, {mode} the trigram index", runs, rows)
    spark.stop()


def staging_only(args: argparse.Namespace) -> None:
    """The ``local[1]`` process: print the seconds :func:`stage_only` takes (on the test database it is given)."""
    spark = spark_session(args.staging_only, "")
    df = cached(spark, args.input, args.partitions)
    stage_only(df.limit(1000), "bench_staged_one_core")  # Spark's Python workers start, as they had in local[2]
    seconds, _ = stage_only(df, "bench_staged_one_core")
    staging.drop("default", "bench_staged_one_core")
    spark.stop()
    print(seconds)


if __name__ == "__main__":
    options = arguments()
    if options.staging_only:
        staging_only(options)
        sys.exit()
    with bench_databases():
        main(options)
