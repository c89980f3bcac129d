"""SQLite: every write takes the database lock, so one UPDATE ... RETURNING claims safely."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.apps import apps

from .base import Backend
from .budget import Budget
from .features import SQLiteFeatures
from .statements.sqlite import SQLiteStatements

try:
    import fcntl
except ImportError:  # not on Windows: there, held() says every lock is held
    fcntl = None  # type: ignore[assignment]


class SQLiteBackend(Backend):
    """SQLite: every write takes the database lock, so one UPDATE ... RETURNING claims safely."""

    features = SQLiteFeatures
    sql = SQLiteStatements

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

    def refuses_settings(self, error: Exception) -> bool:
        return getattr(error.__cause__, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB  # NAME is another file

    def take_write_lock(self) -> None:
        table = self.quote(apps.get_model("nexus_queues", "QueueSettings")._meta.db_table)
        with self.cursor() as cursor:
            cursor.execute(self.sql.TAKE_WRITE_LOCK.format(table=table))

    @contextmanager
    def hold(self, name: str) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        # SQLite has no lock a connection holds alone: a file lock beside the database, which the
        # operating system releases when the process dies. The processes sharing the file are on this host.
        path = self._lock_path(name)
        with path.open("a") as file:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            try:
                yield
            finally:
                path.unlink(missing_ok=True)

    def held(self, names: Collection[str]) -> set[str]:
        if fcntl is None:
            return set(names)
        return {name for name in names if _locked(self._lock_path(name))}

    def _lock_path(self, name: str) -> Path:
        return Path(f"{os.path.abspath(self.connection.settings_dict['NAME'])}.{name}.lock")


def _locked(path: Path) -> bool:
    """Does a live process hold the file lock of ``path``?"""
    try:
        file = path.open("r")
    except FileNotFoundError:
        return False
    with file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
