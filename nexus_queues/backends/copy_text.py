"""Rows to enqueue or stage as the text of PostgreSQL's ``COPY ... FROM STDIN``, written in Python's string methods.

psycopg's ``write_row`` dumps each value on its own, which cost a bulk enqueue more than serializing its messages.
A batch's rows share everything after their hash (headers, status, times), so that part is written once per batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from .rows import EnqueueRow, StagedRow

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

    def line(index: int, row: EnqueueRow) -> str:
        key = row[3:]
        tail = tails.get(key)
        if tail is None:
            rest = (*key[:1], default_status if row.status is None else row.status, *key[2:])
            tail = tails[key] = "\t".join(map(field, rest))
        head = f"{field(row.message_id)}\t{field(row.message)}\t{row.message_hash}\t{tail}\n"  # the hash: hex digits
        return head if ids is None else f"{ids[index]}\t{head}"

    return _joined(line(index, row) for index, row in enumerate(rows))


def staged_chunks(rows: Sequence[StagedRow]) -> Iterator[str]:
    """Staged rows as COPY text in the staging table's column order, a chunk at a time."""
    tails: dict[tuple[object, ...], str] = {}

    def line(row: StagedRow) -> str:
        key = row[5:]
        tail = tails.get(key)
        if tail is None:
            tail = tails[key] = "\t".join(map(field, key))
        message = f"{field(row.message_id)}\t{field(row.message)}\t{field(row.message_hash)}"
        return f"{row.token}\t{row.position}\t{message}\t{tail}\n"

    return _joined(map(line, rows))


def _joined(lines: Iterable[str]) -> Iterator[str]:
    """``lines`` joined :data:`CHUNK_ROWS` at a time."""
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == CHUNK_ROWS:
            yield "".join(chunk)
            chunk = []
    if chunk:
        yield "".join(chunk)
