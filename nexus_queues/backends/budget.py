"""What one statement may carry: the byte budget of batched writes, from the engine's own limits.

MariaDB/MySQL refuses a statement longer than ``max_allowed_packet`` (and drops the connection);
SQLite refuses a row longer than ``SQLITE_MAX_LENGTH`` and more bound parameters than
``SQLITE_MAX_VARIABLE_NUMBER``. Batched writers cut their rows into statements within the budget;
a row that cannot fit even alone is refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..exceptions import MessageTooLarge

ESCAPED = ("'", '"', "\\", "\n", "\r", "\x00", "\x1a")
"""Characters the MySQL driver doubles when it writes a string into a statement."""
VALUE_BYTES = 8
"""Bytes a value takes in a statement besides its own: quotes and the comma between values."""
OTHER_BYTES = 32
"""Bytes a statement spends on a value that is not a string (a number, a datetime, NULL), at most."""
ROW_BYTES = 256
"""Bytes a row's SQL takes besides its values: parentheses, and the default status's subquery."""


def value_bytes(value: Any) -> int:
    """Bytes ``value`` takes written into a statement by the MySQL driver (at most: escapes counted)."""
    if value.__class__ is not str:
        return len(value) * 2 + VALUE_BYTES if isinstance(value, bytes) else OTHER_BYTES
    size = len(value) if value.isascii() else len(value.encode())
    return size + sum(value.count(c) for c in ESCAPED) + VALUE_BYTES


def row_bytes(row: Sequence[Any]) -> int:
    """Bytes ``row`` takes in a statement: its values' and its SQL's."""
    return sum(value_bytes(value) for value in row) + ROW_BYTES


def most_bytes(row: Sequence[Any]) -> int:
    """At least :func:`row_bytes`, counted from lengths alone: each ASCII character taken as escaped, each other
    as four bytes of UTF-8. Cheap, so that only a row near the limit is counted exactly."""
    size = ROW_BYTES
    for value in row:
        if value.__class__ is str:
            size += len(value) * (2 if value.isascii() else 4) + VALUE_BYTES
        else:
            size += OTHER_BYTES if value.__class__ is not bytes else len(value) * 2 + VALUE_BYTES
    return size


@dataclass(frozen=True)
class Budget:
    """How much one statement may carry on a connection; None: no limit the writers need to mind."""

    row_bytes: int | None = None
    """The most bytes one row may take (its values, as :func:`row_bytes` counts them)."""
    statement_bytes: int | None = None
    """The most bytes the rows of one statement may take together."""
    parameters: int | None = None
    """The most bound parameters one statement may have."""
    limit: str = ""
    """The engine's limit these numbers come from, for error messages (``max_allowed_packet 16777216``)."""

    def check(self, rows: Sequence[Sequence[Any]]) -> None:
        """:class:`MessageTooLarge` for the first of ``rows`` that takes more than a statement may carry
        (naming its index when there are several)."""
        if self.row_bytes is None:
            return
        for index, row in enumerate(rows):
            if most_bytes(row) > self.row_bytes and (size := row_bytes(row)) > self.row_bytes:
                raise MessageTooLarge(size, self.row_bytes, self.limit, index if len(rows) > 1 else None)

    def fits(self, size: int) -> bool:
        """Can a value of ``size`` bytes be written in a statement of its own?"""
        return self.row_bytes is None or size <= self.row_bytes

    def batches(self, rows: Sequence[Sequence[Any]], most: int) -> Iterator[Sequence[Any]]:
        """``rows`` in consecutive slices of at most ``most`` rows, each slice one statement within the budget.

        A row too large even alone raises :class:`MessageTooLarge` (its index in ``rows``) before its slice
        is given: callers that name messages check them first (:meth:`check`).
        """
        if rows and self.parameters is not None:
            # One more per row: a row without a status binds two for its default status's subquery.
            most = max(1, min(most, self.parameters // (len(rows[0]) + 1)))
        if self.statement_bytes is None:
            yield from (rows[i : i + most] for i in range(0, len(rows), most))
            return
        start, total = 0, 0
        for index, row in enumerate(rows):
            size = most_bytes(row)
            if size > self.statement_bytes:  # alone in its statement, where its exact size must fit
                size = row_bytes(row)
                if self.row_bytes is not None and size > self.row_bytes:
                    raise MessageTooLarge(size, self.row_bytes, self.limit, index)
            if index > start and (index - start == most or total + size > self.statement_bytes):
                yield rows[start:index]
                start, total = index, 0
            total += size
        if start < len(rows):
            yield rows[start:]


UNLIMITED = Budget()
"""An engine whose limits no batch of ours reaches (PostgreSQL: 1 GB per value, COPY for big batches)."""
