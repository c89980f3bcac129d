"""Bulk enqueue's COPY text: every character a message, header or time may hold is read back as it was."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from nexus_queues import Status, enqueue_many, set_default_status, staging
from nexus_queues.backends import copy_text
from nexus_queues.staging import StagedRow
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db

AWKWARD = ["back\\slash", "tab\there", "new\nline", "carriage\rreturn", 'quote"s', "\\N", "é ✓ 😀", "\\t\\n", ""]


def test_field__escapes_copy_specials_and_writes_null_and_times():
    """Backslash, tab, newline and CR are escaped; None is COPY's NULL; a datetime is ISO 8601."""
    assert copy_text.field("a\\b\tc\nd\re") == "a\\\\b\\tc\\nd\\re"
    assert copy_text.field(None) == "\\N" and copy_text.field("\\N") == "\\\\N"
    assert copy_text.field(datetime(1, 1, 1, tzinfo=UTC)) == "0001-01-01T00:00:00+00:00"


def test_enqueue_many__awkward_text_headers_and_times_read_back_unchanged():
    """What a bulk enqueue writes reads back equal: texts with COPY's special characters, headers, times."""
    at = datetime(2999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    expires = at + timedelta(microseconds=0)
    messages = [Greeting(name=name, times=i) for i, name in enumerate(AWKWARD)]
    result = enqueue_many(messages, at=at, expires_at=expires, headers={"why": "tab\t\\ new\n", "n": 1},
                          return_ids=True)
    rows = {row.pk: row for row in Greeting.queue_model.objects.all()}
    assert [rows[i].message for i in result.ids] == messages
    assert {(r.status, r.process_at, r.expires_at) for r in rows.values()} == {(Status.SLEEPING, at, expires)}
    assert {str(r.headers) for r in rows.values()} == {str({"n": 1, "why": "tab\t\\ new\n"})}


def test_enqueue_many__takes_the_stored_default_status():
    """Rows without a status of their own take the queue's stored default, one batch or several chunks."""
    set_default_status(Greeting, "OnHold")
    enqueue_many(Greeting(name=str(i)) for i in range(copy_text.CHUNK_ROWS + 1))
    assert set(Greeting.queue_items().values_list("status", flat=True)) == {"OnHold"}
    assert Greeting.queue_items().count() == copy_text.CHUNK_ROWS + 1


@pytest.mark.django_db(transaction=True)  # a staging table is made and dropped: DDL ends MariaDB's transaction
def test_stage__awkward_rows_read_back_unchanged():
    """What staging writes reads back equal: message ids, messages, headers and rejects holding COPY's special
    characters, times, NULLs, rows sharing their placement and rows of their own."""
    at = datetime(2999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    rows = [
        StagedRow(7, i, f"id {i} {text}", json.dumps({"name": text}), f"{i:064x}", json.dumps({"why": text}),
                  "OnHold" if i % 2 else None, at if i % 2 else None, None, None)
        for i, text in enumerate(AWKWARD)
    ]  # fmt: skip
    rows.append(StagedRow(7, len(rows), None, None, None, None, None, None, None, json.dumps({"row": AWKWARD})))
    table = staging.new_table_name("greetings")
    staging.create("default", table)
    try:
        staging.stage("default", table, rows)
        stored = staging.staging_model(table).objects.order_by("position").values_list(*StagedRow._fields)
        assert [StagedRow(*row) for row in stored] == rows
    finally:
        staging.drop("default", table)
