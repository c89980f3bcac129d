"""A Spark sync is a batch: the messages it makes Pending (new and changed), and its completion once they finish."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pyspark.errors import PySparkException

from nexus_queues import Status, update_status
from nexus_queues.contrib.spark import sync
from nexus_queues.contrib.spark.models import Sync
from nexus_queues.exceptions import InvalidArgument
from nexus_queues.membership import BATCH_HEADER
from nexus_queues.models import Batch
from nexus_queues.testing import drain
from tests.testapp.queues import BatchReport, Greeting, Product

pytestmark = pytest.mark.django_db(transaction=True)

PRODUCT = "sku string, name string, prices array<struct<currency string, amount decimal(10,2)>>"


def products(count: int, name: str = "Product", start: int = 0) -> list[tuple[Any, ...]]:
    return [(f"SKU-{i}", f"{name} {i}", [("EUR", Decimal(f"{i}.95"))]) for i in range(start, start + count)]


def members(batch: int) -> set[str]:
    return {
        item.message_id
        for item in Product.queue_items().filter(headers__has_key=BATCH_HEADER)
        if item.headers[BATCH_HEADER] == batch
    }


def test_sync__new_and_changed_rows_form_a_batch_whose_completion_runs_once(frame: Any) -> None:
    """A sync of 3 new, 2 changed and 5 unchanged rows makes a batch of 5; the report comes once all are done."""
    sync(frame(products(7), PRODUCT), Product)
    drain(Product)  # the first sync's batch completes; its report has no completion, so nothing else is queued
    rows = products(5) + products(2, "Renamed", start=5) + products(3, start=7)

    counts = sync(frame(rows, PRODUCT), Product, on_complete=BatchReport(note="export prices"))

    assert (counts.new, counts.changed, counts.unchanged) == (3, 2, 5)
    batch = Batch.objects.get(pk=counts.batch)
    assert (batch.queue, batch.total, batch.pending, batch.closed_at is not None) == ("products", 5, 5, True)
    assert batch.label == f"Spark sync #{Sync.objects.get(queue_batch=batch).pk}"
    assert members(batch.pk) == {"SKU-5", "SKU-6", "SKU-7", "SKU-8", "SKU-9"}
    assert not BatchReport.queue_items().exists()

    drained = drain(Product)

    assert drained.processed == 5
    batch.refresh_from_db()
    assert (batch.processed, batch.error, batch.completed_at is not None) == (5, 0, True)
    report = BatchReport.queue_items().get()
    assert report.message.note == "export prices"
    assert (report.message.batch.id, report.message.batch.total, report.message.batch.processed) == (batch.pk, 5, 5)
    drain(BatchReport)
    drain(Product)
    assert BatchReport.queue_items().count() == 1  # once


def test_sync__unchanged_resync_makes_no_batch(frame: Any) -> None:
    """A sync that makes nothing Pending makes no batch, and so no completion."""
    df = frame(products(4), PRODUCT)
    sync(df, Product)

    again = sync(df, Product, on_complete=BatchReport(note="export prices"))

    assert (again.unchanged, again.batch) == (4, None)
    assert Sync.objects.order_by("-pk").first().queue_batch is None
    assert Batch.objects.count() == 1
    drain(Product)
    assert not BatchReport.queue_items().exists()


def test_sync__changing_a_waiting_member_moves_it_to_the_new_batch(frame: Any) -> None:
    """A message changed by a later sync while still Pending leaves the earlier sync's batch for the new one,
    so the earlier one completes without it."""
    first = sync(frame(products(3), PRODUCT), Product, on_complete=BatchReport(note="first"))
    second = sync(frame(products(1, "Renamed"), PRODUCT), Product, on_complete=BatchReport(note="second"))

    assert Batch.objects.get(pk=first.batch).total == 2
    assert Batch.objects.get(pk=second.batch).total == 1
    drain(Product)
    notes = sorted(item.message.note for item in BatchReport.queue_items())
    assert notes == ["first", "second"]


def test_sync__member_stored_finished_counts(frame: Any) -> None:
    """Rows synced with a finished status count at once: a sync of only Cancelled rows completes in its merge."""
    df = frame([(f"SKU-{i}", f"P {i}", [], "Cancelled") for i in range(2)], f"{PRODUCT}, status string")

    counts = sync(df, Product, on_complete=BatchReport(note="none to run"))

    batch = Batch.objects.get(pk=counts.batch)
    assert (batch.total, batch.cancelled, batch.completed_at is not None) == (2, 2, True)
    assert BatchReport.queue_items().get().message.batch.cancelled == 2


def test_sync__queue_without_identity_makes_a_batch(frame: Any) -> None:
    """Every row of a queue without message ids is new, and a member."""
    counts = sync(frame([("Ada",), ("Grace",)], "name string"), Greeting)

    batch = Batch.objects.get(pk=counts.batch)
    assert (batch.queue, batch.total) == ("greetings", 2)
    update_status(Greeting, Status.CANCELLED)
    batch.refresh_from_db()
    assert batch.completed_at is not None


def test_sync__completion_that_cannot_be_is_refused_before_staging(frame: Any) -> None:
    """A completion of a class without a batch field fails the sync, naming why; nothing is stored."""
    df = frame(products(2), PRODUCT)

    with pytest.raises(InvalidArgument, match="cannot be a batch's completion"):
        sync(df, Product, on_complete=Greeting(name="Ada"))
    with pytest.raises(PySparkException, match="on_complete_message must be a JSON object"):
        df.write.format("nexus").mode("append").option("queue", "products").option(
            "on_complete", "batch_reports"
        ).option("on_complete_message", "[1]").save()

    assert not Product.queue_items().exists()
    assert not Batch.objects.exists()


def test_sync__data_source_options_give_the_completion(frame: Any) -> None:
    """Written through the data source, the completion is a queue name and its fields as JSON."""
    df = frame(products(2), PRODUCT)

    df.write.format("nexus").mode("append").option("queue", "products").option("on_complete", "batch_reports").option(
        "on_complete_message", '{"note": "from options"}'
    ).option("batch_label", "catalogue").save()

    batch = Batch.objects.get()
    assert (batch.label, batch.total, batch.completion_message) == ("catalogue", 2, {"note": "from options"})
    drain(Product)
    assert BatchReport.queue_items().get().message.note == "from options"
