"""Queue tables as other tools leave them: timestamps Python cannot read, a table not migrated yet."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection

UNREADABLE_PAST = {"postgresql": "0001-01-01 00:00:00 BC", "mysql": "0000-00-00 00:00:00"}
"""A timestamp each engine stores and Python cannot read, earlier than any real one (SQLite reads what it
cannot parse as NULL, so it has none)."""

UNREADABLE_FUTURE = {"postgresql": "infinity"}
"""One later than any real one (MariaDB stores nothing past 9999)."""


def unreadable(times: dict[str, str]) -> str:
    """This engine's value in ``times``; the test is skipped where the engine has none."""
    if connection.vendor not in times:
        pytest.skip(f"{connection.vendor} stores no such timestamp")
    return times[connection.vendor]


def write_raw(model: type, pk: int, column: str, value: str) -> None:
    """Set one column of one row by raw SQL, past every check of ours."""
    table, column = connection.ops.quote_name(model._meta.db_table), connection.ops.quote_name(column)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = %s WHERE id = %s", [value, pk])


@contextmanager
def table_missing(model: type) -> Iterator[None]:
    """The queue's table under another name meanwhile, as when its migration has not run yet."""
    table = model._meta.db_table
    rename = "ALTER TABLE {} RENAME TO {}".format
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(rename(quote(table), quote(f"{table}_away")))
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(rename(quote(f"{table}_away"), quote(table)))
