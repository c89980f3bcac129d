"""The cluster path: ``manage.py nexus_spark_sync`` on a standalone Spark whose executors run on a worker."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nexus_queues.contrib.spark.models import Sync
from tests.commands import ROOT
from tests.contrib.spark.cluster import HOST, STARTUP, Cluster
from tests.testapp.queues import Product

# Minutes on two cores: once, on the production engine.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engines("postgresql")]

PRICES = pa.list_(pa.struct([("currency", pa.string()), ("amount", pa.decimal128(10, 2))]))


def products_file(folder: Path, count: int) -> Path:
    """A Parquet file of ``count`` products, as another system would export them."""
    table = pa.table(
        {
            "sku": [f"SKU-{i}" for i in range(count)],
            "name": [f"Product {i}" for i in range(count)],
            "prices": pa.array([[{"currency": "EUR", "amount": Decimal(f"{i}.95")}] for i in range(count)], PRICES),
        }
    )
    path = folder / "products.parquet"
    pq.write_table(table, path)
    return path


def counts(output: str) -> dict[str, int]:
    """The counts the command printed (``      new: 20``)."""
    pairs = (line.split(":") for line in output.splitlines() if line.count(":") == 1)
    return {name.strip(): int(value) for name, value in pairs if value.strip().isdigit()}


def sync_on(cluster: Cluster, path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``nexus_spark_sync`` of ``path`` into products as a driver of ``cluster``, to its end."""
    argv = [
        sys.executable, "-m", "django", "nexus_spark_sync", "--queue", "products", "--input", str(path),
        "--master", cluster.url, "--conf", "spark.ui.enabled=false",
    ]  # fmt: skip
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=STARTUP * 2)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{cluster.logs()}"
    return done


def test_nexus_spark_sync__on_a_standalone_cluster(
    spark_cluster: Cluster, child_env: dict[str, str], tmp_path: Path
) -> None:
    """Products synced by a driver on a standalone cluster are staged by the worker's executors and stored once;
    the same file again stores nothing."""
    path = products_file(tmp_path, 20)
    driver_env = {**child_env, "SPARK_LOCAL_IP": HOST}

    first = sync_on(spark_cluster, path, driver_env)
    again = sync_on(spark_cluster, path, driver_env)

    stored = counts(first.stdout)
    assert stored.pop("batch") > 0  # the 20 new messages are the sync's batch
    assert stored == {
        "new": 20, "changed": 0, "unchanged": 0, "scheduled": 0, "rejected": 0, "superseded": 0,
    }  # fmt: skip
    assert counts(again.stdout) == {**stored, "new": 0, "unchanged": 20}  # no batch: it made nothing Pending
    assert sorted(Product.queue_items().values_list("message_id", flat=True)) == sorted(f"SKU-{i}" for i in range(20))
    assert Product.queue_items().get(message_id="SKU-7").message.prices[0].amount == Decimal("7.95")
    assert list(Sync.objects.values_list("state", flat=True)) == ["stored", "stored"]
    spark_cluster.wait_for(lambda: len(spark_cluster.completed_apps()) == 2, "both syncs finished on the master")
    ran_here = {Path(log).parent.parent.name for log in spark_cluster.executor_logs()}
    assert ran_here == {app["id"] for app in spark_cluster.completed_apps()}, spark_cluster.logs()
    # Each sync's tasks ran in its executors. Not every executor: under load the master may start an
    # application a second executor that registers after the work is done, and so runs nothing.
    worked = {log.parent.parent.name for log in spark_cluster.executor_logs() if "Finished task" in log.read_text()}
    assert worked == ran_here, spark_cluster.logs()
