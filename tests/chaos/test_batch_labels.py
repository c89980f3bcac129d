"""A batch's label is checked by one rule at every door that takes one (``enqueue_many(..., batch=...)``,
``nexus_queues.batch``, Spark's ``batch_label`` option): text of at most 200 characters that every engine stores.
A label holding NUL raised PostgreSQL's ``DataError`` and one holding a lone surrogate ``UnicodeEncodeError``; now
each is the library's ``InvalidArgument``, and nothing is stored. A batch's completion holding a value not every
engine stores is refused when the batch opens, not in the transaction that finishes it."""

from __future__ import annotations

import pytest

from nexus_queues import batch, enqueue, enqueue_many
from nexus_queues.contrib.spark.options import write_options
from nexus_queues.exceptions import InvalidArgument, UnstorableValue
from nexus_queues.models import Batch
from tests.testapp.queues import BatchReport, Greeting

pytestmark = pytest.mark.django_db

BAD_LABELS = {
    "nul": ("a\x00b", "holds NUL"),
    "lone_surrogate": ("a\ud800b", "holds a lone surrogate"),
    "too_long": ("x" * 201, "has 201 characters, more than 200"),
    "not_text": (12, "must be text, got int"),
}


@pytest.mark.parametrize(("label", "problem"), BAD_LABELS.values(), ids=BAD_LABELS)
def test_enqueue_many__a_bad_batch_label_stores_nothing(label: str, problem: str) -> None:
    """``enqueue_many(..., batch=label)``: InvalidArgument saying why; no batch, no message."""
    with pytest.raises(InvalidArgument, match=f"^A batch's label .*{problem}"):
        enqueue_many([Greeting(name="a")], batch=label)
    assert not Batch.objects.exists() and not Greeting.queue_items().exists()


@pytest.mark.parametrize(("label", "problem"), BAD_LABELS.values(), ids=BAD_LABELS)
def test_batch__a_bad_label_stores_nothing(label: str, problem: str) -> None:
    """``with batch(queue, label=label)``: InvalidArgument saying why; the block's messages are not stored."""
    with pytest.raises(InvalidArgument, match=problem), batch(Greeting, label=label):
        enqueue(Greeting(name="a"))
    assert not Batch.objects.exists() and not Greeting.queue_items().exists()


@pytest.mark.parametrize(("label", "problem"), BAD_LABELS.values(), ids=BAD_LABELS)
def test_spark_options__a_bad_batch_label_is_refused_while_reading_them(label: str, problem: str) -> None:
    """Spark's ``batch_label`` option meets the same rule when the options are read on the driver, before any task
    (Spark passes every option as text: the number is a label "12", which is fine)."""
    options = {"queue": "greetings", "batch_label": label}
    if isinstance(label, int):
        assert write_options(options).batch_label == "12"
        return
    with pytest.raises(InvalidArgument, match=f"^Option batch_label .*{problem}"):
        write_options(options)


def test_batch__the_longest_label_and_any_text_are_kept() -> None:
    """A label of 200 characters outside the BMP is stored as given."""
    label = "\U0001f600" * 200
    with batch(Greeting, label=label) as made:
        enqueue(Greeting(name="a"))
    assert Batch.objects.get(pk=made.pk).label == label


def test_batch__a_completion_not_every_engine_stores_is_refused_at_once() -> None:
    """A completion message holding NUL fails the batch before it opens (PostgreSQL refused it as a DataError,
    the other engines stored it, to fail the enqueue of the completion when the last member finished)."""
    with pytest.raises(UnstorableValue, match="BatchReport.note: holds NUL"), batch(
        Greeting, on_complete=BatchReport(note="a\x00b")
    ):
        enqueue(Greeting(name="a"))
    assert not Batch.objects.exists() and not Greeting.queue_items().exists()
