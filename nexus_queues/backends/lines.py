"""A queue's rows as JSON lines the database writes itself (PostgreSQL's ``COPY ... TO STDOUT``), for bulk reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections
from django.db.models import QuerySet

from . import backend_for

MESSAGE = "nexus_queues.message"
"""The member holding the row's message, when asked for."""
MAX_COLUMNS = 49
"""PostgreSQL's functions take 100 arguments: ``json_build_object`` makes at most 50 members."""
# One column of text per row, in CSV with quote and delimiter characters that JSON text never holds raw:
# COPY writes each JSON object as it is, one per line.
COPY_SQL = (
    "COPY (SELECT json_build_object({members}) FROM {table} WHERE {where} ORDER BY {id}) TO STDOUT "
    "(FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"
)
# The message with the defaults of the keys it lacks; a message that is not an object as it is.
WITH_DEFAULTS_SQL = "CASE WHEN jsonb_typeof({message}) = 'object' THEN %s::jsonb || {message} ELSE {message} END"


def writes_json_lines(alias: str) -> bool:
    """Can database ``alias`` write a query's rows as JSON lines?"""
    return backend_for(alias).features.writes_json_lines


def json_lines(
    rows: QuerySet[Any], columns: Mapping[str, str], message: bool, defaults: Mapping[str, Any]
) -> bytes | None:
    """``rows`` in id order, one JSON object a line: ``columns`` (its name to the table's column), and under
    :data:`MESSAGE` the message with ``defaults`` for the keys it lacks when ``message``; None when there
    are more than :data:`MAX_COLUMNS` columns."""
    if len(columns) > MAX_COLUMNS:
        return None
    connection = connections[rows.db]
    quote = connection.ops.quote_name
    try:
        where, params = rows.query.get_compiler(using=rows.db).compile(rows.query.where)
    except FullResultSet:
        where, params = "TRUE", []
    except EmptyResultSet:
        return b""
    members = [f"%s, {quote(column)}" for column in columns.values()]
    values: list[Any] = list(columns)
    if message:
        stored = quote("message")
        members.append(f"%s, {WITH_DEFAULTS_SQL.format(message=stored) if defaults else stored}")
        values += [MESSAGE, json.dumps(defaults)] if defaults else [MESSAGE]
    table = quote(rows.model._meta.db_table)
    sql = COPY_SQL.format(members=", ".join(members), table=table, where=where, id=quote("id"))
    connection.ensure_connection()
    with (
        connection.wrap_database_errors,
        connection.connection.cursor() as cursor,
        cursor.copy(sql, [*values, *params]) as copy,
    ):
        return b"".join(bytes(data) for data in copy)
