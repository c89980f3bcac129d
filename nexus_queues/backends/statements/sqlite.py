"""How SQLite says what it says otherwise than the other engines."""

from __future__ import annotations

from .common import Statement, Statements


class SQLiteStatements(Statements):
    """SQLite's SQL."""

    NOW = Statement(
        "Read the server's clock in UTC, to the millisecond (CURRENT_TIMESTAMP has whole seconds only).",
        "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')",
    )
    # A deferred transaction that reads first deadlocks with another reader when both upgrade
    # to write ("database is locked" at once); a write that matches nothing takes the lock now.
    TAKE_WRITE_LOCK = Statement(
        "Take the database's write lock now, changing nothing.", "UPDATE {table} SET queue = queue WHERE 1 = 0"
    )
