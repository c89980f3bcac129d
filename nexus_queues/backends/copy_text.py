"""Rows to enqueue as the text of PostgreSQL's ``COPY ... FROM STDIN``, written in Python's string methods.

psycopg's ``write_row`` dumps each value on its own, which cost a bulk enqueue more than serializing its messages.
A batch's rows share everything after their hash (headers, status, times), so that part is written once per batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from .rows import EnqueueRow

NULL = "\\N"
CHUNK_ROWS = 1000
"""Rows joined into one write: large enough that each write's cost is shared, small enough to stream."""


def field(value: str | datetime | None) -> str:
    """One column's text: ``\\N`` for NULL, a datetime in ISO 8601, a backslash, tab, newline or CR escaped."""
    if value is None:
        return NULL
    if isinstance(value, datetime):
        return value.isoformat()
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return value


def chunks(rows: Sequence[EnqueueRow], default_status: str | None, ids: Sequence[int] | None = None) -> Iterator[str]:
    """``rows`` as COPY text (``ids`` first when given, ``default_status`` for a row without one), a chunk at a time."""
    tails: dict[tuple[object, ...], str] = {}
    lines: list[str] = []
    for index, row in enumerate(rows):
        key = row[3:]
        tail = tails.get(key)
        if tail is None:
            rest = (*key[:1], default_status if row.status is None else row.status, *key[2:])
            tail = tails[key] = "\t".join(map(field, rest))
        head = f"{field(row.message_id)}\t{field(row.message)}\t{row.message_hash}\t{tail}\n"  # the hash: hex digits
        lines.append(head if ids is None else f"{ids[index]}\t{head}")
        if len(lines) == CHUNK_ROWS:
            yield "".join(lines)
            lines = []
    if lines:
        yield "".join(lines)
