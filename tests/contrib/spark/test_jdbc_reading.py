"""Reading a queue in Spark's JVM (``read()``): the same rows and values as the ``nexus`` data source, filters pushed
into the SQL only where they keep their meaning, and the data source where the JVM cannot read."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest
from django.db import connection
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from nexus_queues import Status, enqueue_many
from nexus_queues.contrib.spark import read
from tests.contrib.spark.test_reading import errors_and_times
from tests.testapp.queues import Audit, Greeting, Specimen

spark_db = pytest.mark.django_db(transaction=True)
"""Spark's processes and connections read what the test committed."""
jvm_engines = pytest.mark.engines("postgresql", "mysql")


def in_jvm(df: DataFrame) -> bool:
    """Was ``df`` read with Spark's JDBC source (rather than the nexus data source)?"""
    return "JDBCRelation" in df._jdf.queryExecution().optimizedPlan().toString()


def pushed(df: DataFrame) -> str:
    """The filters Spark wrote into the SQL of ``df``'s read."""
    leaves = df._jdf.queryExecution().executedPlan().collectLeaves()
    [scan] = [leaves.apply(i) for i in range(leaves.size()) if "JDBC" in leaves.apply(i).nodeName()]
    return str(scan.handledFilters().toString())


def python_read(spark: SparkSession, queue: str, **options: str) -> DataFrame:
    return spark.read.format("nexus").option("queue", queue).options(**options).load()


def rows(df: DataFrame) -> list[Any]:
    return sorted(df.collect(), key=lambda row: row.id)


def specimens() -> list[Specimen]:
    """Specimens with every supported type at its edges: text outside the BMP and every escape, decimals of every
    scale and sign and zero, times with and without fractions in several offsets, empty and nested lists, nulls."""
    nepal = timezone(timedelta(hours=5, minutes=45))
    common: dict[str, Any] = {
        "ratio": 0.5, "flag": True, "ref": UUID(int=7), "colour": "red", "level": 1, "place": {"country": "SE"},
    }
    return [
        Specimen(key="a", count=1, price=Decimal("24.95"), amount=Decimal("1"),
                 taken_at=datetime(2026, 3, 2, tzinfo=UTC), day=date(2026, 3, 2),
                 lines=[{"sku": "S1", "quantity": 2, "price": "19.50"}], tags=["x", "y"], scores={"p": 3}, **common),
        Specimen(key="b 😀 \" \\ \n \t \u2028 é", count=-(2**63), price=Decimal("-0.01"),
                 amount=Decimal("-0.1234567890123456785"), day=date(1, 1, 1),
                 taken_at=datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=nepal), lines=[], tags=[], note="naïve 😀",
                 **{**common, "flag": False, "place": {"country": "NP", "city": "Patan"}}),
        Specimen(key="c", count=2**63 - 1, price=Decimal("0"), amount=Decimal("1E+20"),
                 taken_at=datetime(2026, 11, 1, 1, 30, 0, 500, tzinfo=timezone(timedelta(hours=-4))),
                 day=date(9999, 12, 31), lines=[{"sku": "S2", "quantity": 1, "price": "9999999999.99", "note": None},
                                                {"sku": "S3", "quantity": 3, "price": "0.10", "note": "🎉"}],
                 **{**common, "ratio": -1.25e-7, "colour": "blue", "level": 3}),
        Specimen(key="d", count=0, price=Decimal("12.5"), amount=Decimal("0.000000000000000001"),
                 taken_at=datetime(2026, 3, 2, 10, 0, 0, 123456, tzinfo=UTC), day=date(2026, 3, 2), **common),
    ]


@jvm_engines
@spark_db
def test_read__the_jvm_and_python_readers_agree(spark: SparkSession, jdbc: Any) -> None:
    """read() in the JVM gives the columns and values of the nexus data source for every supported type, a message
    lacking a field with a default and a value that no longer fits included (the JVM runs outside UTC)."""
    enqueue_many(specimens())
    stored = dict(Specimen.queue_items().values_list("message_id", "message"))
    lacking = {key: value for key, value in stored["d"].items() if key != "limit"}
    Specimen.queue_items().filter(message_id="d").update(message=lacking)
    misfit = {**stored["a"], "count": "many", "place": {"country": 5}}
    Specimen.queue_items().filter(message_id="a").update(message=misfit)

    jvm, python = read(spark, Specimen), python_read(spark, "specimens")

    assert in_jvm(jvm) and not in_jvm(python)
    assert [(f.name, f.dataType.simpleString()) for f in jvm.schema] == [
        (f.name, f.dataType.simpleString()) for f in python.schema
    ]
    assert [row.asDict(recursive=True) for row in rows(jvm)] == [row.asDict(recursive=True) for row in rows(python)]
    by_key = {row.key: row for row in rows(jvm)}
    assert (by_key["d"].limit, by_key["a"]["count"], by_key["a"].place.country) == (10, None, "5")


@jvm_engines
@spark_db
def test_read__parses_each_message_once(spark: SparkSession, jdbc: Any) -> None:
    """Every field of the read comes from one from_json a row, not one per field (each parsing the whole text)."""
    enqueue_many(specimens())
    plan = read(spark, Specimen)._jdf.queryExecution().executedPlan().toString()
    assert plan.count("from_json(") == 1


@jvm_engines
@spark_db
def test_read__unfiltered_after_filtered_reads_every_row(spark: SparkSession, jdbc: Any) -> None:
    """One loaded DataFrame read filtered (pushed into the SQL), then unfiltered, reads every row the second time."""
    ids = errors_and_times()
    messages = read(spark, Greeting)

    errors = messages.where(F.col("status") == "Error")
    counts = (errors.count(), messages.count(), messages.where(F.col("times") > 100).count(), messages.count())

    assert in_jvm(messages) and "EqualTo(nexus_row_status,Error)" in pushed(errors)
    assert counts == (3, len(ids), 0, len(ids))


@jvm_engines
@spark_db
def test_read__pushes_what_keeps_its_meaning(spark: SparkSession, jdbc: Any) -> None:
    """Comparisons of the id and the text row columns go into the SQL, and compare text by code point whatever the
    database's collation (MariaDB's ignores case and trailing spaces); times and message fields stay in Spark."""
    enqueue_many([Greeting(name=f"n{i}", times=i) for i in range(4)])
    ids = list(Greeting.queue_items().order_by("id").values_list("id", flat=True))
    Greeting.queue_items().filter(id=ids[0]).update(error_type="KeyError")
    Greeting.queue_items().filter(id=ids[1]).update(error_type="keyerror")
    Greeting.queue_items().filter(id=ids[2]).update(error_type="KeyError ", updated_at=datetime(2026, 3, 2, tzinfo=UTC))
    messages = read(spark, Greeting)

    key_errors = messages.where((F.col("error_type") == "KeyError") & (F.col("id") >= ids[0]))
    since = messages.where(F.col("updated_at") < datetime(2026, 3, 3, tzinfo=UTC))
    above = messages.where(F.col("error_type") > "KeyError")
    named = messages.where(F.col("name") == "n3")

    assert [row.id for row in key_errors.collect()] == [ids[0]]
    assert "EqualTo(nexus_row_error_type,KeyError)" in pushed(key_errors) and "nexus_row_id" in pushed(key_errors)
    assert [row.id for row in since.collect()] == [ids[2]] and "Than(nexus_row_updated_at" not in pushed(since)
    assert sorted(row.id for row in above.collect()) == ids[1:3]
    assert [row.times for row in named.collect()] == [3] and "n3" not in pushed(named)


@jvm_engines
@spark_db
def test_read__options_narrow_in_the_sql(spark: SparkSession, jdbc: Any) -> None:
    """The read options mean what they mean to the nexus data source: statuses, ids and times, as given."""
    ids = errors_and_times()

    errors = read(spark, "greetings", status="Error")
    on_tuesday = read(spark, "greetings", updated_from="2026-03-03T05:45:00+05:45", updated_to="2026-03-04T00:00:00Z")
    some_ids = read(spark, "greetings", min_id=ids[3], max_id=ids[6], status="Error,Processed")
    sleeping = read(spark, "greetings", process_from="2028-01-01T00:00:00+00:00")

    assert in_jvm(errors) and (errors.where(F.col("times") > 3).count(), errors.count()) == (1, 3)
    assert sorted(row.id for row in on_tuesday.collect()) == ids[4:7]
    assert sorted(row.id for row in some_ids.collect()) == ids[3:7]
    assert [(row.id, row.status) for row in sleeping.collect()] == [(ids[9], Status.SLEEPING)]


@jvm_engines
@spark_db
def test_read__partitions_on_the_id(spark: SparkSession, jdbc: Any) -> None:
    """The id range splits into the partitions asked for (by default the session's parallelism), each row read once;
    an empty queue reads as an empty DataFrame."""
    enqueue_many([Greeting(name=f"n{i}", times=i) for i in range(50)])

    four, default = read(spark, Greeting, partitions=4), read(spark, Greeting)

    assert (four.rdd.getNumPartitions(), default.rdd.getNumPartitions()) == (4, spark.sparkContext.defaultParallelism)
    assert sorted(row.times for row in four.collect()) == list(range(50))
    assert read(spark, Specimen).count() == 0


@spark_db
def test_read__takes_the_data_source_where_the_jvm_cannot(spark: SparkSession) -> None:
    """A field of JSON text (and any queue on SQLite) is read by the nexus data source, with the same rows."""
    enqueue_many([Audit(event="login", details={"user": 7})])

    audits = read(spark, Audit)

    assert not in_jvm(audits) and [row.details for row in audits.collect()] == ['{"user":7}']
    assert in_jvm(read(spark, Greeting)) is (connection.vendor != "sqlite")
