"""How MariaDB/MySQL says what it says otherwise than the other engines."""

from __future__ import annotations

from .common import Statement, Statements


class MySQLStatements(Statements):
    """MariaDB/MySQL's SQL."""

    NOW = Statement(
        "Read the server's clock in UTC (CURRENT_TIMESTAMP is in the session's time zone).", "SELECT UTC_TIMESTAMP(6)"
    )
    ON_KEY = Statement(
        "What a counter insert does when its unique key exists: update that row.", "ON DUPLICATE KEY UPDATE"
    )
    ADDED = Statement(
        "One counter column of that update: the stored amount plus the new one.",
        "{column} = {column} + VALUES({column})",
    )
