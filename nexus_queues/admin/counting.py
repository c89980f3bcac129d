"""Counting without reading a whole big table: counts stop at a limit and say so."""

from __future__ import annotations

from functools import cached_property

from django.core.paginator import Paginator
from django.db.models import QuerySet


class AtLeast(int):
    """A count that stopped at its limit: the table holds at least this many; prints as ``100000+``."""

    def __str__(self) -> str:
        return f"{int(self)}+"


def count_up_to(rows: QuerySet, limit: int) -> int:
    """``rows.count()``, but reading at most ``limit + 1`` rows; an :class:`AtLeast` when cut off."""
    found = rows.order_by()[: limit + 1].count()
    return AtLeast(limit) if found > limit else found


class LimitedCountPaginator(Paginator):
    """A paginator whose count stops at ``count_limit`` rows (never a full COUNT of a big table)."""

    def __init__(self, *args: object, count_limit: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.count_limit = count_limit

    @cached_property
    def count(self) -> int:
        """Rows in the result, at most ``count_limit`` (then an :class:`AtLeast`)."""
        return count_up_to(self.object_list, self.count_limit)
