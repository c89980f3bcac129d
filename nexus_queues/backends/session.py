"""A backend's hold on its database: the connection, its cursor and clock, transactions and locks, wake-ups,
and the pieces every statement is built from (quoted columns, VALUES tuples, SET lists)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from django.apps import apps
from django.db import DatabaseError, InterfaceError, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from ..changes import Change, Column
from . import transports
from .budget import UNLIMITED, Budget
from .features import Features
from .jdbc import JdbcDriver
from .rows import INSERT_COLUMNS, STATUS_INDEX, EnqueueRow
from .statements import Statements
from .transports import Listener

if TYPE_CHECKING:
    from ..models import QueueItem

_QUOTED_COLUMNS: dict[tuple[str, bool], str] = {}
_DEFAULT_STATUS_SQL: dict[str, str] = {}


class Session:
    """What every operation of a backend stands on; :class:`~.base.Backend` builds the operations on it."""

    features: ClassVar[type[Features]] = Features
    """What the engine can do."""

    sql: ClassVar[type[Statements]] = Statements
    """How the engine says it."""

    jdbc_driver: ClassVar[type[JdbcDriver] | None] = None
    """How a JVM client (Spark's JDBC reader and writer) reaches the engine; None where none does (SQLite)."""

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self.connection = connection
        self.alias = connection.alias

    def quote(self, name: str) -> str:
        """A quoted identifier."""
        return self.connection.ops.quote_name(name)

    def adapt(self, value: datetime | None) -> Any:
        """A datetime as this engine's driver wants it in raw SQL."""
        return self.connection.ops.adapt_datetimefield_value(value)

    def cursor(self) -> Any:
        """A cursor for the statements below (Django's, on the queue's connection)."""
        return self.connection.cursor()

    def database_now(self) -> datetime:
        """The database server's clock, aware in UTC: the one clock every host's decisions can share."""
        with self.cursor() as cursor:
            cursor.execute(self.sql.NOW.text)
            value = cursor.fetchone()[0]
        moment = datetime.fromisoformat(value) if isinstance(value, str) else value
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)

    def budget(self) -> Budget:
        """What one statement may carry on this connection: batched writes stay within it."""
        return UNLIMITED

    # --- wake-ups ------------------------------------------------------------------

    def notify(self, queue: str, cursor: Any = None) -> None:
        """Wake the idle loops of ``queue`` when this transaction commits: by default those on this host."""
        if transports.AVAILABLE:
            database = self.database()
            transaction.on_commit(lambda: transports.wake(database, queue), using=self.alias)

    def listen(self) -> Listener:
        """A new listener for the wake-ups of :meth:`notify` (where ``features.can_listen``): this host's by default."""
        return transports.LocalListener(self.database())

    def transaction_pooled(self) -> bool:
        """Does the alias go through a transaction-pooling proxy, where a session lasts one transaction (no LISTEN,
        no session locks)? Django's ``DISABLE_SERVER_SIDE_CURSORS`` on the alias says so, where the engine has one."""
        return False

    def proxy(self) -> str | None:
        """What shows a proxy between this connection and the server ("port 6432 reached a server on 5432"), or
        None when nothing does."""
        return None

    def by_code_point(self, column: str) -> str:
        """The quoted ``column`` of text compared by its characters' code points, as Spark compares text, whatever
        the column's collation (SQLite's own collation does already)."""
        return column

    def database(self) -> str:
        """Names the database (not the alias), the same in every process that uses it."""
        params = self.connection.settings_dict
        return f"{self.connection.vendor}://{params['HOST']}:{params['PORT']}/{params['NAME']}"

    def reached(self) -> str | None:
        """Which database on which server this connection reaches, asked of the server: the same whatever the route
        (a proxy, another host name); None where the engine cannot say (only PostgreSQL's aliases are compared)."""
        return None

    # --- transactions and locks ----------------------------------------------------

    def shared_between_processes(self) -> bool:
        """Can other processes open this database? (All but an in-memory SQLite database can.)"""
        return True

    def take_write_lock(self) -> None:
        """Make the open transaction take the engine's write lock now, before it reads rows it will change.

        Row locks (``SELECT ... FOR UPDATE``) do this where the engine has them: a no-op by default.
        """

    @contextmanager
    def write_transaction(self) -> Iterator[None]:
        """A transaction that takes the write lock first, for one that reads what it then writes
        (``update_or_create``): on SQLite two such transactions would otherwise fail "database is locked"."""
        with transaction.atomic(using=self.alias):
            self.take_write_lock()
            yield

    def is_deadlock(self, error: DatabaseError) -> bool:
        """Did the database roll the transaction back to break a deadlock (so that running it again is safe)?

        SQLite has no row locks: its transactions that write take the write lock first.
        """
        return False

    def lost(self, error: DatabaseError | InterfaceError) -> bool:
        """Was ``error`` the connection's (lost, refused, the server shutting down) rather than the statement's, so
        that the statement may not have reached the server, or its reply not come back? Django's InterfaceError is
        a connection already closed; SQLite's connection is a file, which has no other."""
        return isinstance(error, InterfaceError)

    def refuses_settings(self, error: Exception) -> bool:
        """Did the server refuse the connection's settings (a database that does not exist or is none, credentials
        it does not take), which no retry mends, rather than fail or not answer?"""
        return False

    def hold(self, name: str) -> AbstractContextManager[None]:
        """Hold lock ``name`` (taken at once; no one else uses it) until the block ends or this process dies.

        Where the engine has none, nothing: :meth:`held` then says every lock is held."""
        return nullcontext()

    def held(self, names: Collection[str]) -> set[str]:
        """Those of locks ``names`` that a live process holds (a dead one's connection released its own)."""
        return set(names)

    def patient_row_locks(self) -> AbstractContextManager[None]:
        """Statements run within wait for row locks as long as their holders keep them (nothing by default)."""
        return nullcontext()

    # --- pieces of statements -------------------------------------------------------

    def _set(self, change: Change) -> tuple[str, list[Any]]:
        """``change`` as the assignments of ``UPDATE ... SET`` and their parameters."""
        assignments, params = [], []
        for column, value in change.values:
            if isinstance(value, Column):
                assignments.append(f"{self.quote(column)} = {self.quote(value.name)}")
            else:
                assignments.append(f"{self.quote(column)} = %s")
                params.append(self.adapt(value) if isinstance(value, datetime) else value)
        return ", ".join(assignments), params

    def _default_status_sql(self) -> str:
        """The queue's stored default status, or the class's (params: queue name, class default)."""
        vendor = self.connection.vendor
        if vendor not in _DEFAULT_STATUS_SQL:
            table = self.quote(apps.get_model("nexus_queues", "QueueSettings")._meta.db_table)
            _DEFAULT_STATUS_SQL[vendor] = self.sql.DEFAULT_STATUS.format(settings=table)
        return _DEFAULT_STATUS_SQL[vendor]

    def _columns(self, with_id: bool = False) -> str:
        key = (self.connection.vendor, with_id)
        if key not in _QUOTED_COLUMNS:
            names = ("id", *INSERT_COLUMNS) if with_id else INSERT_COLUMNS
            _QUOTED_COLUMNS[key] = "(" + ", ".join(self.quote(c) for c in names) + ")"
        return _QUOTED_COLUMNS[key]

    def _memo_adapt(self) -> Any:
        """``adapt`` for one call's values: the rows of a batch share their datetimes, adapted once."""
        done: dict[datetime, Any] = {}

        def adapt(value: Any) -> Any:
            if not isinstance(value, datetime):
                return value
            if value not in done:
                done[value] = self.adapt(value)
            return done[value]

        return adapt

    def _adapted(self, row: EnqueueRow, adapt: Any, default_status: str | None) -> list[Any]:
        """The row's values for the driver, ``default_status`` if it has no status."""
        values = [adapt(value) for value in row]
        if row.status is None:
            values[STATUS_INDEX] = default_status
        return values

    def _values(self, model: type[QueueItem], rows: Sequence[EnqueueRow]) -> tuple[str, list[Any]]:
        """VALUES tuples for ``rows``; a ``None`` status becomes the default-status subquery."""
        options = model.message_class.queue_options
        adapt = self._memo_adapt()
        tuples, params = [], []
        for row in rows:
            slots = ["%s"] * len(INSERT_COLUMNS)
            values = [adapt(value) for value in row]
            if row.status is None:
                slots[STATUS_INDEX] = self._default_status_sql()
                values[STATUS_INDEX : STATUS_INDEX + 1] = [options.queue, options.default_status]
            tuples.append("(" + ", ".join(slots) + ")")
            params.extend(values)
        return ", ".join(tuples), params


def lock_key(name: str) -> int:
    """A signed 32-bit number for ``name``, the same in every process: the key of a lock named so."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big", signed=True)


def chunks(rows: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """``rows`` in slices of ``size``."""
    return [rows[i : i + size] for i in range(0, len(rows), size)]
