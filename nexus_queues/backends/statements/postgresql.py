"""How PostgreSQL says what it says otherwise than the other engines."""

from __future__ import annotations

from .common import Statement, Statements


class PostgresStatements(Statements):
    """PostgreSQL's SQL."""

    NOW = Statement(
        "Read the server's clock as of this statement (CURRENT_TIMESTAMP stands still in a transaction).",
        "SELECT statement_timestamp()",
    )
    JSON_FROM_TEXT = Statement("A text column's value as a jsonb column's.", "{}::jsonb")
    # An array of ids is looked up by primary key; IN (subquery) plans a hash join over the whole table.
    CLAIMED_IDS = Statement(
        "Which rows a claim leases: the ids its pick chose, as an array.", "id = ANY(ARRAY({pick}))"
    )
    # A plain UPDATE locks rows in its plan's order (a bitmap scan's is the heap's); the sorted
    # subquery locks them in id order, as update_status does, so the two never wait on each other.
    HELD_IDS = Statement(
        "Which rows a fenced change touches: those of the {held} conditions, locked in id order first.",
        "id = ANY(ARRAY(SELECT id FROM {table} WHERE {held} ORDER BY id FOR UPDATE))",
    )
