"""A queue's rows as the table a JVM client reads with JDBC (the ``dbtable`` of Spark's JDBC source): one SQL text,
the query's parameters written into it, since a JDBC source takes no parameters."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db.models import QuerySet

from ..exceptions import InvalidArgument
from . import backend_for

ROWS_SQL = "(SELECT {columns} FROM {table} WHERE {where}) nexus_rows"
_PLAIN_TEXT = re.compile(r"[\w .:+-]*")
"""The texts written into the SQL as they are: statuses (validated), and times as Django gives them to a driver."""


def jvm_rows(rows: QuerySet[Any], columns: Sequence[str], *, text: Collection[str], prefix: str) -> str:
    """``rows`` as a table of their ``columns``, each named ``prefix`` + its name; those in ``text`` compare by code
    point, as Spark compares text, so that a filter Spark writes into the SQL keeps its meaning."""
    backend = backend_for(rows.db)
    try:
        where, params = rows.query.get_compiler(using=rows.db).compile(rows.query.where)
    except FullResultSet:
        where, params = "1 = 1", []
    except EmptyResultSet:
        where, params = "1 = 0", []
    selected = []
    for name in columns:
        column = backend.quote(name)
        column = backend.by_code_point(column) if name in text else column
        selected.append(f"{column} AS {backend.quote(prefix + name)}")
    table = backend.quote(rows.model._meta.db_table)
    return ROWS_SQL.format(columns=", ".join(selected), table=table, where=where % tuple(map(_literal, params)))


def _literal(value: Any) -> str:
    """``value`` as SQL: the numbers, statuses and times of a read's narrowing, and nothing else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, datetime):
        value = value.isoformat(sep=" ")
    if isinstance(value, str) and _PLAIN_TEXT.fullmatch(value):
        return f"'{value}'"
    raise InvalidArgument(f"{value!r} cannot be written into a JDBC read's SQL.")
