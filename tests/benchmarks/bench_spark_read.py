"""Reading a queue of 1,000,000 products on Spark: the ``nexus`` data source beside ``spark.read.jdbc`` on id.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench_read \
        .venv/bin/python tests/benchmarks/bench_spark_read.py --rows 1000000 --rounds 2

Creates and afterwards drops the test database ``test_<name>``, fills the demo's ``product_updates``
queue with ``--rows`` products by SQL (each with two prices, one with a validity window; 1% of them
in Error), then times, in turn for ``--rounds`` rounds on one SparkSession (``local[2]``):

  nexus        ``spark.read.format("nexus")`` of every column (message fields typed), each row counted and
               a hash of all its columns summed, so that every row and column is made
  jdbc         ``spark.read.jdbc`` of the same table partitioned on id (``--partitions``, fetchsize 2000, the
               message as its JSON text), counted and hashed the same way
  nexus_error  the nexus read narrowed by ``.option("status", "Error")`` (in the database's query), beside
               jdbc_error, JDBC's ``where(status == "Error")`` (pushed down)
  spark_side   the nexus read's own Arrow batches, read once before the rounds and kept in files, given to Spark
               by a Python data source that only opens them: what Spark spends on a Python source's batches
               (Arrow into the JVM, the hash), with no database and no parsing

Spark's JDBC driver is Debian's ``libpostgresql-jdbc-java`` (``apt-get install libpostgresql-jdbc-java``):
without the jar the JDBC figures are left out, and the bench says so.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings_spark")

import django

django.setup()

from datetime import UTC, datetime  # noqa: E402
from decimal import Decimal  # noqa: E402

import pyarrow as pa  # noqa: E402
from django.db import connection  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

from demo_project.shop.prices import Price  # noqa: E402
from demo_project.shop.queues import ProductUpdated  # noqa: E402
from nexus_queues import enqueue  # noqa: E402
from nexus_queues.contrib.spark import session  # noqa: E402
from nexus_queues.contrib.spark.executors import DjangoSetup  # noqa: E402
from nexus_queues.contrib.spark.options import read_options  # noqa: E402
from nexus_queues.contrib.spark.reading import QueueReader  # noqa: E402
from nexus_queues.contrib.spark.schema import spark_schema  # noqa: E402
from tests.benchmarks.databases import bench_databases  # noqa: E402

QUEUE = ProductUpdated.queue_model._meta.db_table


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="Products in the queue.")
    parser.add_argument("--rounds", type=int, default=2, help="Rounds, each reader once per round, in turn.")
    parser.add_argument("--partitions", type=int, default=10, help="Partitions of both reads (nexus: 1 per 100,000).")
    parser.add_argument("--jdbc-jar", default="/usr/share/java/postgresql.jar", help="libpostgresql-jdbc-java's jar.")
    return parser.parse_args()


def sql(statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def fill(rows: int) -> None:
    """One product enqueued, then copied by SQL to ``rows`` products with their own sku; 1% in Error."""
    window = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    prices = [
        Price(currency="EUR", amount=Decimal("19.95")),
        Price(currency="USD", amount=Decimal("21.50"), valid_from=window[0], valid_to=window[1]),
    ]
    enqueue(ProductUpdated(sku="SKU-1", name="A product of the benchmark", prices=prices))
    columns = [c.name for c in connection.introspection.get_table_description(connection.cursor(), QUEUE)]
    copied = [c for c in columns if c not in ("id", "message_id", "message")]
    sql(
        f"INSERT INTO {QUEUE} (message_id, message, {', '.join(copied)}) "
        f"SELECT 'SKU-' || g, jsonb_set(message, '{{sku}}', to_jsonb('SKU-' || g)), {', '.join(copied)} "
        f"FROM {QUEUE}, generate_series(2, %s) g",
        (rows,),
    )
    sql(f"UPDATE {QUEUE} SET status = 'Error', error_type = 'KeyError' WHERE id %% 100 = 0")
    sql(f"VACUUM ANALYZE {QUEUE}")


def timed(run: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    rows = run()
    return time.perf_counter() - started, rows


def made(df: DataFrame) -> Callable[[], int]:
    """Every row and column of ``df`` made (a hash of them all summed), and the rows counted."""
    return lambda: int(df.select(F.count(F.lit(1)), F.sum(F.hash(*df.columns))).collect()[0][0])


def readers(spark: SparkSession, args: argparse.Namespace, jdbc: bool) -> dict[str, DataFrame]:
    nexus = spark.read.format("nexus").option("queue", "product_updates").option("partitions", args.partitions).load()
    errors = spark.read.format("nexus").option("queue", "product_updates").option("status", "Error").load()
    found = {"nexus": nexus, "nexus_error": errors}
    if jdbc:
        params = connection.settings_dict
        host, port = params["HOST"] or "127.0.0.1", params["PORT"] or 5432
        url = f"jdbc:postgresql://{host}:{port}/{params['NAME']}?user={params['USER']}"
        first, last = sql(f"SELECT min(id), max(id) FROM {QUEUE}")[0]
        table = spark.read.jdbc(
            url,
            QUEUE,
            column="id",
            lowerBound=first,
            upperBound=last,
            numPartitions=args.partitions,
            properties={"driver": "org.postgresql.Driver", "fetchsize": "2000"},
        )
        found |= {"jdbc": table, "jdbc_error": table.where(F.col("status") == "Error")}
    return found


class ArrowFiles(DataSource):
    """``spark.read.format("arrow_files").option("folder", ...)``: one partition per Arrow file of ``folder``."""

    @classmethod
    def name(cls) -> str:
        return "arrow_files"

    def schema(self) -> StructType:
        return spark_schema(ProductUpdated)

    def reader(self, schema: StructType) -> DataSourceReader:
        return ArrowFilesReader(self.options["folder"])


class ArrowFilesReader(DataSourceReader):
    def __init__(self, folder: str) -> None:
        self.folder = folder

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(str(path)) for path in sorted(Path(self.folder).glob("*.arrow"))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        with pa.ipc.open_file(partition.value) as batches:
            for i in range(batches.num_record_batches):
                yield batches.get_batch(i)


def spark_side(spark: SparkSession, args: argparse.Namespace, folder: str) -> DataFrame:
    """The nexus reader's batches of every partition, read here once and written to ``folder``, read back by Spark."""
    options = read_options({"queue": "product_updates", "partitions": str(args.partitions)})
    reader = QueueReader.plan(options, spark_schema(ProductUpdated), DjangoSetup.of_this_process())
    for i, partition in enumerate(reader.partitions()):
        batches = list(reader.read(partition))
        with pa.ipc.new_file(Path(folder) / f"{i:04d}.arrow", batches[0].schema) as file:
            for batch in batches:
                file.write_batch(batch)
    spark.dataSource.register(ArrowFiles)
    return spark.read.format("arrow_files").option("folder", folder).load()


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(args: argparse.Namespace) -> None:
    jdbc = Path(args.jdbc_jar).exists()
    if not jdbc:
        print(f"No JDBC driver at {args.jdbc_jar} (apt-get install libpostgresql-jdbc-java): JDBC figures left out.")
    fill(args.rows)
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
        "spark.sql.session.timeZone": "UTC",
    }
    spark = session("local[2]", **conf, **({"spark.jars": args.jdbc_jar} if jdbc else {}))
    spark.sparkContext.setLogLevel("ERROR")
    frames = readers(spark, args, jdbc)
    with tempfile.TemporaryDirectory(prefix="nexus_read_bench_") as folder:
        frames["spark_side"] = spark_side(spark, args, folder)
        print(f"{args.rows} products, {args.partitions} partitions, local[2]; {uptime()}", flush=True)
        seconds: dict[str, list[float]] = {name: [] for name in frames}
        for _ in range(args.rounds):
            for name, df in frames.items():
                took, rows = timed(made(df))
                expected = args.rows if not name.endswith("_error") else args.rows // 100
                assert rows == expected, f"{name} read {rows} rows, not {expected}"
                seconds[name].append(took)
                print(f"  {name:12s} {took:6.2f} s", flush=True)
    spark.stop()
    rates = {}
    for name, runs in seconds.items():
        rows = args.rows if not name.endswith("_error") else args.rows // 100
        rates[name] = rows / statistics.median(runs)
        print(f"{name:12s} {rates[name]:10.0f} rows/s  median {statistics.median(runs):6.2f} s")
    print(uptime())
    for faster, slower in (("nexus", "jdbc"), ("nexus_error", "jdbc_error"), ("spark_side", "jdbc")):
        if faster in rates and slower in rates:
            print(f"{faster} / {slower}: {rates[faster] / rates[slower]:.2f}")


if __name__ == "__main__":
    options = arguments()
    with bench_databases():
        main(options)
