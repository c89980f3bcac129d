"""Connection errors: what a failing or lost database raises, and how a long-running process reconnects after one."""

from __future__ import annotations

from django.db import DatabaseError, InterfaceError, connections

DATABASE_ERRORS = (DatabaseError, InterfaceError)
"""What a failing or lost database raises. Django's InterfaceError is no DatabaseError: PyMySQL raises it
for a connection the server killed (``InterfaceError: (0, '')``)."""


def reset_connections() -> None:
    """Close this thread's connections, so that the next query reconnects; those inside a transaction are left
    to its rollback, and a connection already gone cannot fail the close."""
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            continue
        try:
            connection.close()
        except DATABASE_ERRORS:
            pass
