"""A sync's options are checked on the driver before Spark starts a task: a batch label too long or holding NUL
failed only at the commit, after every row was staged (minutes for a large sync)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from nexus_queues import staging
from nexus_queues.contrib.spark import sync
from nexus_queues.contrib.spark.models import Sync
from nexus_queues.exceptions import InvalidArgument
from nexus_queues.models import Batch
from tests.testapp.queues import Product

pytestmark = pytest.mark.django_db(transaction=True)

PRODUCT = "sku string, name string, prices array<struct<currency string, amount decimal(10,2)>>"
BAD_OPTIONS = {
    "label_too_long": ({"batch_label": "x" * 300}, "Option batch_label 'xxx.*has 300 characters"),
    "label_with_nul": ({"batch_label": "a\x00b"}, "Option batch_label 'a.x00b' holds NUL"),
    "rejects_in_a_file": ({"rejects": "/etc/hostname/rejects.jsonl"}, "Option rejects '/etc/hostname/rejects.jsonl'"),
    "max_rejects_too_big": ({"max_rejects": str(2**63)}, "Option max_rejects must be a whole number from 0"),
}


@pytest.fixture
def jobs(spark: SparkSession) -> Iterator[Any]:
    """``jobs()``: the Spark jobs started by this test's thread since it began (its own job group)."""
    group = f"options-{uuid.uuid4().hex[:8]}"
    spark.sparkContext.setJobGroup(group, "a test of the options")
    yield lambda: spark.sparkContext.statusTracker().getJobIdsForGroup(group)
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]


def nothing_was_done() -> None:
    """No staging table, no running sync record, no batch, no message."""
    tables = [t for t in connection.introspection.table_names() if t.startswith(staging.PREFIX)]
    assert tables == []
    assert not Sync.objects.filter(state=Sync.State.RUNNING).exists()
    assert not Batch.objects.exists() and not Product.queue_items().exists()


def rows() -> list[tuple[Any, ...]]:
    return [(f"SKU-{i}", f"Product {i}", []) for i in range(20)]


@pytest.mark.parametrize(("options", "problem"), BAD_OPTIONS.values(), ids=BAD_OPTIONS)
def test_sync__a_bad_option_fails_before_any_task(frame: Any, jobs: Any, options: dict[str, str], problem: str) -> None:
    """``sync(df, Product, **options)`` raises InvalidArgument naming the option; Spark ran no job, nothing is left."""
    df = frame(rows(), PRODUCT)
    with pytest.raises(InvalidArgument, match=problem):
        sync(df, Product, **options)
    assert jobs() == []
    assert not Sync.objects.exists()
    nothing_was_done()


def product_writer(spark: SparkSession) -> Any:
    """A write of rows to the products queue through the data source: a DataFrame Spark needs no job to plan (a
    repartitioned one would run its shuffle's job before Spark asks the data source for its writer)."""
    return spark.createDataFrame(rows(), PRODUCT).write.format("nexus").mode("append").option("queue", "products")


@pytest.mark.parametrize(("options", "problem"), BAD_OPTIONS.values(), ids=BAD_OPTIONS)
def test_data_source__a_bad_option_fails_before_any_task(spark: SparkSession, jobs: Any, options: dict[str, str],
                                                         problem: str) -> None:
    """``df.write.format("nexus")`` with the option fails with the library's error while Spark plans the write."""
    writer = product_writer(spark)
    for name, value in options.items():
        writer = writer.option(name, value)
    with pytest.raises(PySparkException, match=f"InvalidArgument: {problem}"):
        writer.save()
    assert jobs() == []
    nothing_was_done()


def test_data_source__a_sync_record_that_is_not_running_is_refused(spark: SparkSession, jobs: Any) -> None:
    """The ``sync`` option naming no running record fails before staging (the commit would have filled it)."""
    finished = Sync.objects.create(queue="products", state=Sync.State.STORED)
    with pytest.raises(PySparkException, match=f"Option sync names no running sync: #{finished.pk}"):
        product_writer(spark).option("sync", finished.pk).save()
    assert jobs() == []
    nothing_was_done()
