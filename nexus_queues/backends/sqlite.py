"""SQLite: every write takes the database lock, so one UPDATE ... RETURNING claims safely."""

from __future__ import annotations

import os
import sqlite3

from django.apps import apps

from .base import Backend
from .budget import Budget


class SQLiteBackend(Backend):
    """SQLite: every write takes the database lock, so one UPDATE ... RETURNING claims safely."""

    now_sql = "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')"  # CURRENT_TIMESTAMP has whole seconds only

    def database(self) -> str:
        return f"sqlite://{os.path.abspath(self.connection.settings_dict['NAME'])}"

    def budget(self) -> Budget:
        """Rows within ``SQLITE_MAX_LENGTH`` and statements within ``SQLITE_MAX_VARIABLE_NUMBER``, as compiled."""
        self.connection.ensure_connection()
        raw = self.connection.connection
        length = raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        variables = raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        return Budget(row_bytes=length, parameters=variables, limit=f"SQLITE_MAX_LENGTH {length:,}")

    def shared_between_processes(self) -> bool:
        return not self.connection.is_in_memory_db()  # type: ignore[attr-defined]

    def take_write_lock(self) -> None:
        # A deferred transaction that reads first deadlocks with another reader when both upgrade
        # to write ("database is locked" at once); a write that matches nothing takes the lock now.
        table = self.quote(apps.get_model("nexus_queues", "QueueSettings")._meta.db_table)
        with self.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET queue = queue WHERE 1 = 0")
