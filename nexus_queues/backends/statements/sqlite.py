"""How SQLite says what it says otherwise than the other engines."""

from __future__ import annotations

from .common import Statement, Statements


class SQLiteStatements(Statements):
    """SQLite's SQL."""

    NOW = Statement(
        "Read the server's clock in UTC, to the millisecond (CURRENT_TIMESTAMP has whole seconds only).",
        "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')",
    )
