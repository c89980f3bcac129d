"""Spark's filters on a queue's row columns, pushed down to the database as Django lookups.

A filter Spark pushes is kept as a picklable :class:`Condition` (the reader travels to Spark's
processes) and becomes a ``Q`` there. Filters on numbers and times are left to the database alone;
filters on text are also checked again by Spark, as MariaDB compares text without case and trailing
spaces, and Spark does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from .schema import row_columns

if TYPE_CHECKING:
    from ...messages import QueueMessage

_LOOKUPS: dict[type[Filter], str] = {
    EqualTo: "exact",
    EqualNullSafe: "exact",
    GreaterThan: "gt",
    GreaterThanOrEqual: "gte",
    LessThan: "lt",
    LessThanOrEqual: "lte",
    In: "in",
    StringStartsWith: "startswith",
}
_KINDS: dict[str, type] = {
    "id": int,
    "attempts": int,
    "created_at": datetime,
    "updated_at": datetime,
    "process_at": datetime,
    "message_id": str,
    "status": str,
    "error_type": str,
    "error_message": str,
}
"""The row columns filters are pushed on, by their database name, and the type of value each compares to."""


@dataclass(frozen=True)
class Condition:
    """One pushed filter: ``column`` (the database's name) ``lookup`` ``value``, negated or not."""

    column: str
    lookup: str
    value: Any
    negated: bool = False

    def q(self) -> Q:
        """The condition as a Django ``Q``, with SQL's rule that a comparison with null holds for no row."""
        if self.lookup == "isnull":
            return Q(**{f"{self.column}__isnull": self.value != self.negated})
        matches = Q(**{f"{self.column}__{self.lookup}": self.value})
        if self.negated:
            return Q(**{f"{self.column}__isnull": False}) & ~matches
        return matches

    @property
    def exact(self) -> bool:
        """Does the database decide this condition as Spark would (Spark need not check it again)?"""
        return self.lookup == "isnull" or _KINDS[self.column] is not str


def push(message_class: type[QueueMessage], filters: Iterable[Filter]) -> tuple[list[Condition], list[Filter]]:
    """The conditions the database can apply of ``filters``, and the filters Spark must still apply itself."""
    columns = {name: column.name for name, column in row_columns(message_class).items()}
    pushed: list[Condition] = []
    left: list[Filter] = []
    for spark_filter in filters:
        condition = condition_of(spark_filter, columns)
        if condition is not None:
            pushed.append(condition)
        if condition is None or not condition.exact:
            left.append(spark_filter)
    return pushed, left


def condition_of(spark_filter: Filter, columns: dict[str, str]) -> Condition | None:
    """The condition of one of Spark's filters on a row column (``columns``: read name to database name), or
    None when the database cannot apply it as Spark would."""
    negated = isinstance(spark_filter, Not)
    inner = spark_filter.child if isinstance(spark_filter, Not) else spark_filter
    path: tuple[str, ...] = getattr(inner, "attribute", ())
    column = columns.get(path[0], "") if len(path) == 1 else ""
    if column not in _KINDS:
        return None
    if isinstance(inner, IsNull | IsNotNull):
        return Condition(column, "isnull", isinstance(inner, IsNull), negated)
    lookup = _LOOKUPS.get(type(inner))
    if lookup is None or (negated and isinstance(inner, EqualNullSafe)):
        return None
    value: Any = getattr(inner, "value", None)
    if isinstance(inner, EqualNullSafe) and value is None:
        return Condition(column, "isnull", True)
    if isinstance(inner, In):
        if any(v is None for v in value):
            return None  # NOT IN with a null holds for no row, IN with one as without: leave both to Spark
        return Condition(column, lookup, tuple(value), negated) if all(_fits(column, v) for v in value) else None
    return Condition(column, lookup, value, negated) if _fits(column, value) else None


def _fits(column: str, value: Any) -> bool:
    kind = _KINDS[column]
    if kind is datetime:
        return isinstance(value, datetime) and value.tzinfo is not None
    return isinstance(value, kind) and not isinstance(value, bool)


def where(conditions: Iterable[Condition]) -> Q:
    """All ``conditions`` at once."""
    q = Q()
    for condition in conditions:
        q &= condition.q()
    return q
