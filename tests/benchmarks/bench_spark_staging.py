"""One partition's staging of a Spark sync without Spark: CPU time per row of each step, both paths.

Make the input with the demo's command, then::

    .venv/bin/python manage.py nexus_demo_catalogue --products 200000 --today 2026-11-23 --output /tmp/products.parquet
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench_staging .venv/bin/python \\
        tests/benchmarks/bench_spark_staging.py --input /tmp/products.parquet --rows 100000

Reads ``--rows`` products into Arrow batches of 10,000 (Spark's ``maxRecordsPerBatch``), then stages them as a
sync's task does (``RowStager.rows``, then COPY into a staging table on PostgreSQL) with each path in turn,
``--rounds`` times alternated; prints the median CPU time of this process per row of each step (CPU time
rather than wall time, so that other work on the machine weighs less), and checks that both staged the same rows.
Creates and afterwards drops the test database ``test_<name>``.
"""

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings_spark")

import django

django.setup()

import pyarrow.parquet as pq  # noqa: E402

from demo_project.shop.queues import ProductUpdated  # noqa: E402
from nexus_queues import cycle_collector, staging  # noqa: E402
from nexus_queues.contrib.spark.rows import RowStager  # noqa: E402
from tests.benchmarks.databases import bench_databases  # noqa: E402

TABLE = "bench_staging_rows"


def stage(batches: list, whole_batches: bool) -> tuple[dict[str, float], list]:
    """CPU seconds of validating and of writing, and the staged rows."""
    stager = RowStager(ProductUpdated, 1, 0, datetime.now(UTC), staging.budget("default"), whole_batches=whole_batches)
    seconds = {"validating": 0.0, "writing": 0.0}
    staged = []
    staging.clear("default", TABLE)
    for batch in batches:
        started = time.process_time()
        rows = stager.rows(batch)
        seconds["validating"] += time.process_time() - started
        started = time.process_time()
        staging.stage("default", TABLE, rows)
        seconds["writing"] += time.process_time() - started
        staged += rows
    assert whole_batches == (stager.row_by_row == 0), stager.row_by_row
    return seconds, staged


def main(args: argparse.Namespace) -> None:
    table = pq.read_table(args.input).slice(0, args.rows)
    batches = table.to_batches(max_chunksize=10_000)
    staging.create("default", TABLE)
    runs: dict[str, list[dict[str, float]]] = {"row by row": [], "a batch at a time": []}
    with cycle_collector.held():  # as a sync's task holds it per batch
        for _ in range(args.rounds):
            per_row, rows = stage(batches, whole_batches=False)
            whole, same = stage(batches, whole_batches=True)
            assert rows == same, "the two paths staged different rows"
            runs["row by row"].append(per_row)
            runs["a batch at a time"].append(whole)
    print(f"{table.num_rows} demo products, {args.rounds} rounds, CPU µs per row (medians); load {os.getloadavg()}")
    for name, seconds in runs.items():
        steps = {step: statistics.median(run[step] for run in seconds) * 1e6 / table.num_rows for step in seconds[0]}
        print(f"  {name:18s} " + ", ".join(f"{step} {value:.1f}" for step, value in steps.items())
              + f", in all {sum(steps.values()):.1f}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="Parquet products (nexus_demo_catalogue).")
    parser.add_argument("--rows", type=int, default=100_000, help="How many of them to stage.")
    parser.add_argument("--rounds", type=int, default=3, help="Runs of each path, alternated (median).")
    options = parser.parse_args()
    with bench_databases():
        main(options)
