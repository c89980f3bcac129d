"""The byte budget of batched writes: how rows are cut into statements, and each engine's budget read from it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from django.db import connection, transaction

from nexus_queues.backends import backend_for
from nexus_queues.backends.budget import ROW_BYTES, UNLIMITED, Budget, most_bytes, row_bytes, value_bytes
from nexus_queues.enqueueing import enqueue, enqueue_many
from nexus_queues.exceptions import MessageTooLarge
from tests.testapp.queues import Greeting, Product


def test_value_bytes__counts_utf8_bytes_and_the_drivers_escapes():
    """A string takes its UTF-8 bytes, one more per character the driver escapes, and its quotes and comma."""
    assert value_bytes("abc") == value_bytes("") + 3
    assert value_bytes("é") == value_bytes("") + 2
    assert value_bytes('a"b\\c') == value_bytes("") + 7
    assert value_bytes(None) == value_bytes(12) > 0


def test_batches__cut_by_bytes_in_order():
    """Consecutive slices, each within the statement's bytes, none longer than ``most``."""
    rows = [("x" * 100,)] * 10
    size = most_bytes(rows[0])
    budget = Budget(row_bytes=3 * size, statement_bytes=3 * size)
    assert [len(batch) for batch in budget.batches(rows, 1000)] == [3, 3, 3, 1]
    assert [len(batch) for batch in budget.batches(rows, 2)] == [2, 2, 2, 2, 2]


def test_most_bytes__bounds_the_exact_count():
    """The count from lengths alone is never below the exact one, whatever the characters."""
    for text in ("plain", '"' * 50, "\\n\x00", "é" * 30, "\U0001f600" * 10, ""):
        assert most_bytes((text, None, 7)) >= row_bytes((text, None, 7))


def test_batches__a_row_near_the_limit_is_counted_exactly():
    """A row whose length bound exceeds a statement, but whose exact size fits, is written alone."""
    rows = [("a",), ("x" * 1000,), ("b",)]
    budget = Budget(row_bytes=row_bytes(rows[1]), statement_bytes=row_bytes(rows[1]))
    assert [len(batch) for batch in budget.batches(rows, 10)] == [1, 1, 1]


def test_batches__cut_by_bound_parameters():
    """No statement binds more parameters than the engine allows (one more per row kept for a status)."""
    rows = [(1, 2, 3)] * 100
    assert [len(batch) for batch in Budget(parameters=40).batches(rows, 1000)] == [10] * 10


def test_batches__a_row_too_large_alone_raises_with_its_index():
    """A row larger than a statement raises MessageTooLarge naming its index, size and limit."""
    rows = [("small",), ("x" * 1000,)]
    budget = Budget(row_bytes=500, statement_bytes=500, limit="max_allowed_packet 600")
    with pytest.raises(MessageTooLarge, match=r"Message 1 takes 1,\d+ bytes.*at most 500 \(max_allowed_packet 600\)"):
        list(budget.batches(rows, 10))


def test_batches__unlimited_is_plain_slices():
    """Without limits (PostgreSQL), rows are cut by count alone."""
    assert [len(batch) for batch in UNLIMITED.batches([(1,)] * 7, 3)] == [3, 3, 1]


def test_check__names_the_message_only_in_a_batch():
    """One row too large: "The message"; in several, its index."""
    budget = Budget(row_bytes=ROW_BYTES + 50, limit="L")
    with pytest.raises(MessageTooLarge, match="The message takes"):
        budget.check([("x" * 100,)])
    with pytest.raises(MessageTooLarge, match="Message 2 takes") as raised:
        budget.check([("a",), ("b",), ("x" * 100,)])
    assert raised.value.index == 2 and raised.value.limit == ROW_BYTES + 50


@pytest.fixture
def sqlite_limits() -> Iterator[sqlite3.Connection]:
    """The test's SQLite connection, its limits restored afterwards (they are the connection's own)."""
    connection.ensure_connection()
    raw = connection.connection
    kept = {limit: raw.getlimit(limit) for limit in (sqlite3.SQLITE_LIMIT_LENGTH, sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)}
    yield raw
    for limit, value in kept.items():
        raw.setlimit(limit, value)


@pytest.mark.engines("sqlite")
@pytest.mark.django_db
def test_sqlite__the_budget_is_the_connections_limits(sqlite_limits):
    """SQLite's budget: rows within SQLITE_MAX_LENGTH, statements within its variable number, as set now."""
    sqlite_limits.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 123_456)
    sqlite_limits.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    budget = backend_for("default").budget()
    assert (budget.row_bytes, budget.parameters, budget.statement_bytes) == (123_456, 999, None)
    assert budget.limit == "SQLITE_MAX_LENGTH 123,456"


@pytest.mark.engines("sqlite")
@pytest.mark.django_db
def test_sqlite__batches_stay_within_the_variable_limit(sqlite_limits, settings):
    """enqueue_many and upserts of more parameters than SQLite binds in a statement are stored."""
    sqlite_limits.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    assert len(enqueue_many(Greeting(name=f"g{n}") for n in range(1000)).stored) == 1000
    assert len(enqueue_many(Product(sku=f"s{n}", name="p") for n in range(1000)).stored) == 1000


@pytest.mark.engines("sqlite")
@pytest.mark.django_db(transaction=True)
def test_sqlite__a_message_longer_than_sqlite_max_length_fails_alone(sqlite_limits):
    """A message longer than SQLITE_MAX_LENGTH: MessageTooLarge naming the limit, nothing stored, connection usable."""
    sqlite_limits.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100_000)
    with pytest.raises(MessageTooLarge, match="SQLITE_MAX_LENGTH 100,000"):
        enqueue_many([Greeting(name="ok"), Greeting(name="g" * 200_000)])
    with pytest.raises(MessageTooLarge):
        enqueue(Product(sku="big", name="p" * 200_000))
    assert not Greeting.queue_model.objects.exists() and not Product.queue_model.objects.exists()
    with transaction.atomic():
        enqueue(Greeting(name="after"))
    assert Greeting.queue_model.objects.count() == 1
