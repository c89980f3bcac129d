"""The one place that knows how PostgreSQL, MariaDB/MySQL and SQLite differ, like Django's own backends.

Everything else asks :func:`backend_for` for a :class:`~.base.Backend` and calls its methods; its
``features`` say what the engine can do (:mod:`.features`), its ``sql`` how it says it (:mod:`.statements`).
"""

from __future__ import annotations

from django.db import connections

from ..exceptions import ConfigurationError
from .base import Backend
from .mysql import MySQLBackend
from .postgresql import PostgresBackend
from .rows import Claim, EnqueueRow, Finish
from .sqlite import SQLiteBackend
from .transports import Listener

__all__ = ["Backend", "Claim", "EnqueueRow", "Finish", "Listener", "backend_for"]

_BACKENDS: dict[str, type[Backend]] = {"postgresql": PostgresBackend, "mysql": MySQLBackend, "sqlite": SQLiteBackend}


def backend_for(alias: str) -> Backend:
    """The backend of database ``alias``."""
    connection = connections[alias]
    try:
        return _BACKENDS[connection.vendor](connection)
    except KeyError:
        raise ConfigurationError(
            f"Database {alias!r} uses {connection.vendor}; nexus_queues supports PostgreSQL, MariaDB/MySQL and SQLite."
        ) from None
