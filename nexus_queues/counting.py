"""Counting without reading a whole big table: counts stop at a limit and say so."""

from __future__ import annotations

from django.db.models import QuerySet


class AtLeast(int):
    """A count that stopped at its limit: the table holds at least this many; prints as ``100000+``."""

    def __str__(self) -> str:
        return f"{int(self)}+"


def count_up_to(rows: QuerySet, limit: int) -> int:
    """``rows.count()``, but reading at most ``limit + 1`` rows; an :class:`AtLeast` when cut off."""
    found = rows.order_by()[: limit + 1].count()
    return AtLeast(limit) if found > limit else found
