"""Reading queues as DataFrames: typed columns, every row once across partitions, analysis."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from nexus_queues import Status, enqueue_many
from nexus_queues.contrib.spark.executors import DjangoSetup
from nexus_queues.contrib.spark.options import ReadOptions, read_options
from nexus_queues.contrib.spark.reading import (
    IdRange,
    QueueReader,
    RowMaker,
    default_partitions,
    id_ranges,
    pages,
)
from nexus_queues.contrib.spark.schema import spark_schema
from nexus_queues.exceptions import InvalidArgument, InvalidStatus
from tests.testapp.queues import Audit, Greeting, Product

spark_db = pytest.mark.django_db(transaction=True)
"""Spark's processes read what the test committed."""


def read(spark: SparkSession, queue: str, **options: str) -> DataFrame:
    return spark.read.format("nexus").option("queue", queue).options(**options).load()


@spark_db
def test_read__schema_is_the_message_class(spark: SparkSession) -> None:
    """A read's schema is the row columns then the message's fields, as spark_schema gives them (JSON marks kept)."""
    df = read(spark, "products")

    assert df.schema == spark_schema(Product)
    assert read(spark, "audits").schema == spark_schema(Audit)
    assert df.columns[:9] == [
        "id", "message_id", "status", "created_at", "updated_at", "process_at", "attempts", "error_type",
        "error_message",
    ]
    assert df.columns[9:] == ["sku", "name", "prices", "attributes"]


@spark_db
def test_read__values_round_trip(spark: SparkSession) -> None:
    """Products enqueued come back with their row columns and typed fields: decimals, nested prices, maps."""
    enqueue_many([
        Product(sku="A", name="Alpha", prices=[{"currency": "EUR", "amount": "1.95"}], attributes={"colour": "red"}),
        Product(sku="B", name="Beta"),
    ])
    stored = {item.message_id: item for item in Product.queue_items()}

    rows = {row.sku: row for row in read(spark, "products").collect()}

    a = rows["A"]
    assert (a.id, a.message_id, a.status, a.attempts, a.error_type, a.error_message, a.process_at) == (
        stored["A"].id, "A", Status.PENDING, 0, "", "", None,
    )
    # PySpark hands timestamps out as naive local times.
    assert a.created_at == stored["A"].created_at.astimezone().replace(tzinfo=None)
    assert a.updated_at == stored["A"].updated_at.astimezone().replace(tzinfo=None)
    assert (a.name, a.attributes) == ("Alpha", {"colour": "red"})
    assert [(p.currency, p.amount) for p in a.prices] == [("EUR", Decimal("1.95"))]
    assert (rows["B"].prices, rows["B"].attributes) == ([], {})


@spark_db
def test_read__no_identity_and_json_fields(spark: SparkSession) -> None:
    """Greetings have no message_id; Audit's free-form details read as JSON text, its status as stored."""
    enqueue_many([Greeting(name="Ada", times=3)])
    enqueue_many([Audit(event="login", duration=1.5, details={"user": 7, "tags": ["a"]})])

    greeting = read(spark, "greetings").collect()[0]
    audit = read(spark, "audits").collect()[0]

    assert (greeting.message_id, greeting.name, greeting.times) == (None, "Ada", 3)
    assert (audit.status, audit.event, audit.duration) == ("OnHold", "login", 1.5)
    assert audit.details == '{"tags":["a"],"user":7}'


@spark_db
def test_read__message_that_no_longer_fits(spark: SparkSession) -> None:
    """A stored message that no longer fits its class reads with null where it does not; the read goes on."""
    enqueue_many([Greeting(name="Ada", times=2), Greeting(name="Bob", times=3)])
    first = Greeting.queue_items().order_by("id").values_list("id", flat=True)[0]
    Greeting.queue_items().filter(id=first).update(message={"name": "Ada", "times": "many", "gone": True})

    rows = read(spark, "greetings").orderBy("id").select("name", "times").collect()

    assert [tuple(row) for row in rows] == [("Ada", None), ("Bob", 3)]


@spark_db
def test_read__every_row_once_across_partitions(spark: SparkSession) -> None:
    """With several partitions each row is read once: as many distinct ids as rows, in that many partitions."""
    enqueue_many([Greeting(name=f"n{i}", times=i) for i in range(50)])

    df = read(spark, "greetings", partitions="4")

    assert df.rdd.getNumPartitions() == 4
    assert (df.count(), df.select("id").distinct().count()) == (50, 50)
    assert sorted(row.times for row in df.select("times").collect()) == list(range(50))


@spark_db
def test_read__empty_queue(spark: SparkSession) -> None:
    """An empty queue reads as an empty DataFrame with the queue's schema."""
    df = read(spark, "products", partitions="3")

    assert (df.count(), df.schema) == (0, spark_schema(Product))


@spark_db
def test_read__given_schema_projects(spark: SparkSession) -> None:
    """A schema given to the read picks and types the columns: only those are read."""
    enqueue_many([Product(sku="A", name="Alpha", prices=[{"currency": "EUR", "amount": "2.50"}])])

    df = spark.read.format("nexus").option("queue", "products").schema(
        "name string, status string, prices array<struct<currency string, amount double>>"
    ).load()

    assert df.collect()[0].asDict(recursive=True) == {
        "name": "Alpha", "status": "Pending", "prices": [{"currency": "EUR", "amount": 2.5}],
    }


@spark_db
def test_read__errors_per_day(spark: SparkSession) -> None:
    """Errors grouped by the day they happened and their type: the README's analysis example."""
    enqueue_many([Greeting(name=f"n{i}") for i in range(6)])
    ids = list(Greeting.queue_items().values_list("id", flat=True))
    monday, tuesday = datetime(2026, 3, 2, 10, tzinfo=UTC), datetime(2026, 3, 3, 23, tzinfo=UTC)
    failed = Greeting.queue_items().filter(id__in=ids[:4])
    failed.filter(id__in=ids[:2]).update(status=Status.ERROR, error_type="KeyError", updated_at=monday)
    failed.filter(id__in=ids[2:4]).update(status=Status.ERROR, error_type="TimeoutError", updated_at=tuesday)
    Greeting.queue_items().filter(id=ids[4]).update(updated_at=tuesday + timedelta(hours=1))

    messages = spark.read.format("nexus").option("queue", "greetings").load()
    errors_per_day = (
        messages.where(F.col("status") == "Error")
        .groupBy(F.to_date("updated_at").alias("day"), "error_type")
        .count()
        .orderBy("day", "error_type")
    )

    assert [tuple(row) for row in errors_per_day.collect()] == [
        (date(2026, 3, 2), "KeyError", 2),
        (date(2026, 3, 3), "TimeoutError", 2),
    ]


def errors_and_times() -> list[int]:
    """Twelve greetings: 2 Pending, 3 Error (2 on Monday, 1 on Tuesday), 2 Processed (Tuesday), 5 Pending (one
    Sleeping until 2029); their ids."""
    enqueue_many([Greeting(name=f"n{i}", times=i) for i in range(12)])
    ids = list(Greeting.queue_items().order_by("id").values_list("id", flat=True))
    monday, tuesday = datetime(2026, 3, 2, 10, tzinfo=UTC), datetime(2026, 3, 3, 23, tzinfo=UTC)
    items = Greeting.queue_items()
    items.update(updated_at=monday - timedelta(days=7))
    items.filter(id__in=ids[2:4]).update(status=Status.ERROR, updated_at=monday)
    items.filter(id__in=ids[4:5]).update(status=Status.ERROR, updated_at=tuesday)
    items.filter(id__in=ids[5:7]).update(status=Status.PROCESSED, updated_at=tuesday)
    items.filter(id=ids[9]).update(status=Status.SLEEPING, process_at=datetime(2029, 1, 1, tzinfo=UTC))
    return ids


@spark_db
def test_queue_reader__plans_without_counting() -> None:
    """Planning a read asks the database for the smallest and largest id: no COUNT, which reads every row."""
    enqueue_many([Greeting(name=f"n{i}") for i in range(10)])
    ids = list(Greeting.queue_items().order_by("id").values_list("id", flat=True))
    reader = QueueReader.plan(ReadOptions("greetings", 3), spark_schema(Greeting), DjangoSetup.of_this_process())

    with CaptureQueriesContext(connection) as queries:
        ranges = reader.partitions()

    assert ranges == id_ranges(ids[0], ids[9], 3)
    assert len(queries) == 2
    assert not any("COUNT" in query["sql"].upper() for query in queries)


def test_id_ranges__split_evenly() -> None:
    """Ids split into ranges of equal width that cover them all once; never more ranges than ids."""
    assert id_ranges(1, 10, 3) == [IdRange(1, 3), IdRange(4, 6), IdRange(7, 10)]
    assert id_ranges(5, 6, 4) == [IdRange(5, 5), IdRange(6, 6)]
    assert id_ranges(7, 7, 1) == [IdRange(7, 7)]


def test_default_partitions__by_row_count() -> None:
    """One partition per 100,000 rows, at least one and at most 64."""
    assert [default_partitions(rows) for rows in (1, 100_000, 100_001, 10**9)] == [1, 1, 2, 64]


@pytest.mark.django_db
def test_pages__every_row_of_the_range_once() -> None:
    """A range read a few rows a query gives each of its rows once, in id order, and none outside it."""
    enqueue_many([Greeting(name=f"n{i}", times=i) for i in range(10)])
    ids = list(Greeting.queue_items().values_list("id", flat=True))

    rows = list(pages(Greeting.queue_items(), IdRange(ids[1], ids[8]), ["id", "status"], size=3))

    assert rows == [(i, "Pending") for i in ids[1:9]]


def maker(*names: str, message_class: type = Greeting) -> RowMaker:
    """A RowMaker of the queue's columns ``names`` (a name it lacks as a string column)."""
    known = spark_schema(message_class)
    columns = [known[name] if name in known.names else StructField(name, StringType()) for name in names]
    return RowMaker(message_class, StructType(columns))


def test_row_maker__fetches_what_the_schema_needs() -> None:
    """Only the columns the schema names are fetched (the id always, the message once for all its fields)."""
    assert maker("status", "attempts").columns == ["id", "status", "attempts"]
    assert maker("name", "id", "times").columns == ["id", "message"]


def test_row_maker__message_fields_from_json() -> None:
    """Message fields come from the stored JSON; a field it lacks reads as the field's default."""
    greetings = maker("id", "name", "times")

    assert greetings.row((4, {"name": "Ada", "times": 3})) == (4, "Ada", 3)
    assert greetings.row((5, {"name": "Bob"})) == (5, "Bob", 1)


def test_row_maker__message_that_no_longer_fits() -> None:
    """A stored message that no longer fits its class reads with nulls where it does not, the rest as stored."""
    greetings = maker("id", "name", "times")

    assert greetings.row((6, {"name": "Ada", "times": "many", "gone": True})) == (6, "Ada", None)
    assert greetings.row((7, "not an object")) == (7, None, 1)


class Order(BaseModel):
    id: int
    status: str


def test_row_maker__field_named_like_a_row_column() -> None:
    """A message field wins its name; the row column it shadows reads under nexus_<name>."""
    orders = maker("nexus_id", "nexus_status", "id", "status", message_class=Order)

    assert orders.columns == ["id", "status", "message"]
    assert orders.row((9, "Pending", {"id": 123, "status": "shipped"})) == (9, "Pending", 123, "shipped")


def test_row_maker__unknown_column() -> None:
    """A schema naming a column the queue does not have fails, listing the ones it has."""
    with pytest.raises(InvalidArgument, match="no column colour; it has id, message_id, .*, name, times"):
        maker("name", "colour")


@spark_db
def test_read__unfiltered_after_filtered_reads_every_row(spark: SparkSession) -> None:
    """A DataFrame loaded once and read filtered, then unfiltered, reads every row the second time (Spark 4.3
    reuses a pushed-down read for the later queries of its DataFrame: the reason filters are not pushed)."""
    ids = errors_and_times()
    messages = read(spark, "greetings")

    errors = messages.where(F.col("status") == "Error").count()
    every = messages.count()

    assert (errors, every) == (3, len(ids))


@spark_db
def test_read__narrowed_by_options(spark: SparkSession) -> None:
    """The read options status, ids and times narrow the rows read; every query of the DataFrame reads them."""
    ids = errors_and_times()

    errors = read(spark, "greetings", status="Error")
    on_tuesday = read(spark, "greetings", updated_from="2026-03-03T00:00:00+00:00", updated_to="2026-03-04T00:00:00Z")
    some_ids = read(spark, "greetings", min_id=str(ids[3]), max_id=str(ids[6]), status="Error,Processed")
    sleeping = read(spark, "greetings", process_from="2028-01-01T00:00:00+00:00")

    assert (errors.where(F.col("times") > 3).count(), errors.count()) == (1, 3)
    assert sorted(row.id for row in on_tuesday.collect()) == ids[4:7]
    assert sorted(row.id for row in some_ids.collect()) == ids[3:7]
    assert [row.id for row in sleeping.collect()] == [ids[9]]


def test_read_options__narrowing_checked() -> None:
    """A read option that does not parse is an error naming it; a time needs its offset."""
    given = {"queue": "q", "status": "Error, Processed", "min_id": "3", "updated_to": "2026-03-02T00:00:00Z"}
    options = read_options(given)

    assert (options.statuses, options.min_id, options.max_id) == (("Error", "Processed"), 3, None)
    assert options.times == {"updated_at": (None, datetime(2026, 3, 2, tzinfo=UTC))}
    with pytest.raises(InvalidArgument, match="Option updated_from must be a time in ISO 8601 with its offset"):
        read_options({"queue": "q", "updated_from": "2026-03-02T00:00:00"})
    with pytest.raises(InvalidArgument, match="Option max_id must be a whole number"):
        read_options({"queue": "q", "max_id": "ten"})
    with pytest.raises(InvalidStatus, match="'error'"):
        read_options({"queue": "q", "status": "error"})
