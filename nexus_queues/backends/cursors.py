"""psycopg cursors that prepare our hot statements, seen by Django like any of its own.

Django turns psycopg's preparing off; these cursors bind on the server and prepare the statements
they run (with ``PREPARED_STATEMENTS``), and Django's cursor wrapper around them applies
``execute_wrapper`` and, with ``DEBUG`` or ``CaptureQueriesContext``, the query log. A connection
keeps its psycopg cursor between calls: a worker woken from its sleep pays for each object it makes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from functools import cache
from typing import Any
from weakref import WeakKeyDictionary

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

NEVER_BY_COUNT = 1 << 62
"""A psycopg ``prepare_threshold`` no statement reaches: only those executed with ``prepare=True`` are prepared."""
_idle: WeakKeyDictionary[BaseDatabaseWrapper, dict[tuple[bool, bool], Any]] = WeakKeyDictionary()
"""Per Django connection, its psycopg cursors not in use, by ``prepare`` and whether they load times with
psycopg's loader (``USE_TZ``)."""


@cache
def _cursor_class(prepare: bool) -> type:
    """A server-side-binding psycopg cursor class, preparing every statement or none; defined on
    first use so that psycopg is imported only for PostgreSQL."""
    import psycopg

    class Cursor(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            return super().execute(query, params, **{"prepare": prepare, **kwargs})

    return Cursor


@cache
def _native_timestamptz_loader() -> type:
    """psycopg's own loader of ``timestamptz`` (in C with psycopg's binary package)."""
    import psycopg
    from psycopg.pq import Format

    loader = psycopg.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, Format.TEXT)
    assert loader is not None  # psycopg registers one for every type it knows
    return loader


@contextmanager
def prepared_cursor(connection: BaseDatabaseWrapper, prepare: bool) -> Iterator[Any]:
    """Django's cursor wrapper around a server-side-binding psycopg cursor on ``connection``.

    With ``prepare`` its statements are prepared, so the server parses and plans each enqueue,
    lease and acknowledgement once per connection (planning the lease alone costs more than
    running it). Driver errors still become Django's. The psycopg cursor is the one the
    connection's last call used, unless a call still uses it (a call within this one's block).
    """
    connection.ensure_connection()
    driver_connection = connection.connection
    idle = _idle.setdefault(connection, {})
    kind = (prepare, connection.timezone is not None)
    raw = idle.pop(kind, None)
    if raw is None or raw.connection is not driver_connection:
        raw = _new_cursor(connection, prepare)
    connection.validate_thread_sharing()
    try:
        yield LoggedCursor(raw, connection) if connection.queries_logged else connection.make_cursor(raw)
    finally:
        idle[kind] = raw


def _new_cursor(connection: BaseDatabaseWrapper, prepare: bool) -> Any:
    driver_connection = connection.connection
    if prepare and driver_connection.prepare_threshold is None:
        # Django turns psycopg's preparing off (None); a threshold never reached turns it back on
        # for the statements that ask for it, and for them only.
        driver_connection.prepare_threshold = NEVER_BY_COUNT
    with connection.wrap_database_errors:
        raw = _cursor_class(prepare)(driver_connection)
    if connection.timezone is not None:
        # Django's own loader parses each time in Python and then replaces its zone (a lease reads four of them
        # a row, ten times psycopg's cost); the session's TimeZone is Django's, so psycopg's gives the same moment.
        raw.adapters.register_loader("timestamptz", _native_timestamptz_loader())
    return raw


class LoggedCursor(CursorDebugWrapper):
    """Django's debug cursor, logging each statement with its parameters in it.

    Django reads the statement back from the psycopg cursor, which a server-side-binding
    cursor does not keep; it composes it as Django's own server-side binding does.
    """

    def execute(self, sql: Any, params: Any = None) -> Any:
        with self.debug_sql(_composed(self.db, sql, params), params):
            return CursorWrapper.execute(self, sql, params)


def _composed(connection: BaseDatabaseWrapper, sql: str, params: Any) -> str:
    if params is None:
        return sql
    from psycopg.errors import DataError

    try:
        return str(connection.ops.compose_sql(sql, params))  # type: ignore[attr-defined]
    except DataError:  # as Django's own logging of server-side bound statements
        return sql


def copy_rows(cursor: Any, sql: str, write: Callable[[Any], None]) -> None:
    """Run ``COPY ... FROM STDIN`` on a wrapped psycopg ``cursor``, ``write(copy)`` sending its rows;
    through Django's execute wrappers and query log, like a statement."""

    def run(sql: str, params: Any, many: bool, context: Any) -> None:
        with cursor.db.wrap_database_errors, cursor.cursor.copy(sql) as copy:
            write(copy)

    logged = cursor.debug_sql(sql) if isinstance(cursor, CursorDebugWrapper) else nullcontext()
    with logged:
        cursor._execute_with_wrappers(sql, None, False, executor=run)
