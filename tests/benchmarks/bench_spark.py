"""Spark's ``nexus`` data source syncing 1,000,000 products on PostgreSQL, beside a raw COPY and Spark's JDBC writer.

Make the two inputs with the demo's command, the second with 1% of the products changed::

    .venv/bin/python manage.py nexus_demo_catalogue --products 1000000 --today 2026-11-23 --output /tmp/products.parquet
    .venv/bin/python manage.py nexus_demo_catalogue --products 1000000 --today 2026-11-23 --change 1 \\
        --output /tmp/products_changed.parquet

then::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench_spark .venv/bin/python tests/benchmarks/bench_spark.py \\
        --input /tmp/products.parquet --changed-input /tmp/products_changed.parquet

Creates and afterwards drops the test database ``test_<name>``. One SparkSession (``local[2]``, UI off)
reads each input once into a cached DataFrame of ``--partitions`` partitions, so that every writer
below starts from the same rows in memory. Each figure is the median of ``--sync-rounds`` runs of
each sync and ``--rounds`` runs of the others:

  first_sync    ``sync(df, ProductUpdated)`` into an empty queue
  unchanged     the same DataFrame again: no queue row may be written (checked by the rows' xmin)
  changed_1pct  the changed input, then the input again, in turn: each run rewrites exactly 1% of the rows
  raw_copy      psycopg's COPY of the same rows (sku, the canonical JSON the sync stores) into a plain
                table with a jsonb column: the limit
  jdbc_N        ``df.write.jdbc`` of sku and ``to_json`` of the other columns into the same kind of table,
                with the Debian PostgreSQL JDBC driver: batchsize 1000 (Spark's default), then 10000 with
                ``reWriteBatchedInserts=true``
"""

import argparse
import os
import statistics
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
from django.db import connection  # noqa: E402
from django.test.utils import setup_databases, setup_test_environment, teardown_databases  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from demo_project.shop.queues import ProductUpdated  # noqa: E402
from nexus_queues.contrib.spark import SyncCounts, session, sync  # noqa: E402
from nexus_queues.serialization import canonical_json  # noqa: E402

QUEUE = ProductUpdated.queue_model._meta.db_table
PLAIN = "bench_plain_products"
T = TypeVar("T")
RATIOS = (
    ("first_sync", "raw_copy"),  # target: at least 0.4
    ("first_sync", "jdbc_1000"),  # target: above 1, and for jdbc_10000
    ("first_sync", "jdbc_10000"),
    ("unchanged", "first_sync"),  # target: at least 1
    ("changed_1pct", "first_sync"),
    ("unchanged", "raw_copy"),
)
"""Rates printed as ratios, the issue's targets beside them."""


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="Parquet products (nexus_demo_catalogue).")
    parser.add_argument("--changed-input", required=True, help="The same products, 1%% changed (--change 1).")
    parser.add_argument("--rounds", type=int, default=3, help="Runs of the COPY and each JDBC write (median).")
    parser.add_argument("--sync-rounds", type=int, default=3, help="Runs of each kind of sync (median).")
    parser.add_argument("--partitions", type=int, default=4, help="Partitions of the cached DataFrames.")
    parser.add_argument("--jdbc-jar", default="/usr/share/java/postgresql.jar", help="libpostgresql-jdbc-java's jar.")
    parser.add_argument("--only", default="sync,copy,jdbc", help="Which groups to run (sync, copy, jdbc).")
    parser.add_argument(
        "--without-search-index", action="store_true", help="Drop the queue's trigram search index (an opt-in) first."
    )
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


def report(name: str, seconds: list[float], rows: int, note: str = "") -> float:
    median = statistics.median(seconds)
    runs = ", ".join(f"{s:.1f}" for s in seconds)
    print(f"{name:14s} {rows / median:10.0f} rows/s  median {median:6.1f} s  (runs: {runs} s){note}", flush=True)
    return rows / median


def syncs(df: DataFrame, changed: DataFrame, rounds: int, rows: int) -> dict[str, float]:
    """First sync, unchanged re-sync and 1% change, each checked by what it wrote."""
    rates, first, again, change = {}, [], [], []
    for _ in range(rounds):
        sql(f"TRUNCATE {QUEUE}")
        xid = next_xid()
        seconds, counts = timed(sync, df, ProductUpdated)
        assert (counts.new, written_since(xid)) == (rows, rows), counts
        first.append(seconds)
    rates["first_sync"] = report("first_sync", first, rows)
    for _ in range(rounds):
        xid = next_xid()
        seconds, counts = timed(sync, df, ProductUpdated)
        assert counts == SyncCounts(0, 0, rows, 0, 0, 0), counts
        assert written_since(xid) == 0, "the unchanged re-sync rewrote queue rows"
        again.append(seconds)
    rates["unchanged"] = report("unchanged", again, rows, "  0 queue rows written (xmin)")
    expected = round(rows / 100)
    for turn in range(rounds):
        xid = next_xid()
        seconds, counts = timed(sync, changed if turn % 2 == 0 else df, ProductUpdated)
        assert (counts.changed, counts.new, written_since(xid)) == (expected, 0, expected), counts
        change.append(seconds)
    rates["changed_1pct"] = report("changed_1pct", change, rows, f"  {expected} queue rows written (xmin)")
    return rates


def canonical_rows(path: str) -> list[tuple[str, str]]:
    """The (sku, canonical JSON) pairs the sync stores for the products in ``path``."""
    pairs = []
    for batch in pq.ParquetFile(path).iter_batches(columns=["sku", "name", "prices"]):
        for product in batch.to_pylist():
            message = ProductUpdated.model_validate(product)
            pairs.append((message.sku, canonical_json(message)))
    return pairs


def raw_copy(dsn: str, path: str, rounds: int) -> float:
    """psycopg's COPY of (sku, canonical JSON) into a plain table, the JSON made beforehand."""
    pairs = canonical_rows(path)
    seconds = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(rounds):
            conn.execute(f"TRUNCATE {PLAIN}")
            started = time.perf_counter()
            with conn.transaction(), conn.cursor() as cursor, cursor.copy(f"COPY {PLAIN} FROM STDIN") as copy:
                for pair in pairs:
                    copy.write_row(pair)
            seconds.append(time.perf_counter() - started)
    return report("raw_copy", seconds, len(pairs))


def jdbc(df: DataFrame, url: str, rounds: int, rows: int, batch: int) -> float:
    """``df.write.jdbc`` of sku and the other columns as JSON into a plain table."""
    flat = df.select("sku", F.to_json(F.struct(*[c for c in df.columns if c != "sku"])).alias("message"))
    properties = {"driver": "org.postgresql.Driver", "batchsize": str(batch)}
    seconds = []
    for _ in range(rounds):
        sql(f"TRUNCATE {PLAIN}")
        seconds.append(timed(flat.write.jdbc, url, PLAIN, mode="append", properties=properties)[0])
        assert sql(f"SELECT count(*) FROM {PLAIN}")[0][0] == rows
    return report(f"jdbc_{batch}", seconds, rows)


def cached(spark: SparkSession, path: str, partitions: int) -> DataFrame:
    df = spark.read.parquet(path).repartition(partitions).cache()
    df.count()
    return df


def main(args: argparse.Namespace) -> None:
    params = connection.settings_dict
    host, port, name = params["HOST"] or "127.0.0.1", params["PORT"] or 5432, params["NAME"]
    dsn = f"host={host} port={port} user={params['USER']} dbname={name}"
    jdbc_url = f"jdbc:postgresql://{host}:{port}/{name}?user={params['USER']}&stringtype=unspecified"
    sql(f"CREATE TABLE {PLAIN} (sku text, message jsonb)")
    if args.without_search_index:
        found = sql("SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s", (QUEUE, "%gin_trgm%"))
        for (index,) in found:
            sql(f'DROP INDEX "{index}"')
    spark = session(
        "local[2]",
        **{
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.jars": args.jdbc_jar,
            "spark.driver.memory": "2g",
            "spark.sql.session.timeZone": "UTC",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = cached(spark, args.input, args.partitions)
    rows = df.count()
    only = args.only.split(",")
    print(f"{rows} products, {args.partitions} partitions, local[2]; load average {os.getloadavg()[0]:.1f}")
    rates = {}
    if "sync" in only:
        rates |= syncs(df, cached(spark, args.changed_input, args.partitions), args.sync_rounds, rows)
    if "copy" in only:
        rates["raw_copy"] = raw_copy(dsn, args.input, args.rounds)
    if "jdbc" in only:
        rates["jdbc_1000"] = jdbc(df, jdbc_url, args.rounds, rows, 1000)
        rates["jdbc_10000"] = jdbc(df, jdbc_url + "&reWriteBatchedInserts=true", args.rounds, rows, 10000)
    spark.stop()
    print(f"load average {os.getloadavg()[0]:.1f} (the machine is shared)")
    for faster, slower in RATIOS:
        if faster in rates and slower in rates:
            print(f"{faster} / {slower}: {rates[faster] / rates[slower]:.2f}")


if __name__ == "__main__":
    options = arguments()
    setup_test_environment()
    config = setup_databases(verbosity=0, interactive=False)
    try:
        main(options)
    finally:
        teardown_databases(config, verbosity=0)
