"""The one place that knows how PostgreSQL, MariaDB/MySQL and SQLite differ.

Everything else asks :func:`engine_for` for an :class:`Engine` and calls its methods; the
capability flags say what each engine can do in one statement.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import cache, partial
from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from django.core.exceptions import EmptyResultSet
from django.db import DatabaseError, IntegrityError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from . import local_wakeups
from .conf import settings
from .exceptions import ConfigurationError
from .quarantine import UNREADABLE, quarantine, read_around
from .status import Status

if TYPE_CHECKING:
    from .models import JobRun, QueueItem

# Columns every enqueue writes, in this order; the rest take their database defaults.
INSERT_COLUMNS = (
    "message_id",
    "message",
    "message_hash",
    "headers",
    "status",
    "process_at",
    "expires_at",
    "created_at",
    "updated_at",
)
STATUS_INDEX = INSERT_COLUMNS.index("status")

# A new version of a message with identity replaces the stored one: these columns change.
REPLACED_COLUMNS = ("message", "headers", "status", "process_at", "expires_at", "updated_at")
RESET_ON_REPLACE = (
    ("attempts", "0"),
    ("lease_expires_at", "NULL"),
    ("error_type", "''"),
    ("error_message", "''"),
    ("error_traceback", "''"),
)

# MariaDB/MySQL's ON DUPLICATE KEY UPDATE: the new version replaces the stored one, or (second form)
# only if its JSON differs. message_hash last: MySQL assigns left to right, and the guard reads it.
_MYSQL_NEW = [(c, f"VALUES({c})") for c in REPLACED_COLUMNS] + list(RESET_ON_REPLACE)
_MYSQL_HASH = "message_hash = VALUES(message_hash)"
MYSQL_REPLACE = ", ".join([*(f"{c} = {v}" for c, v in _MYSQL_NEW), _MYSQL_HASH])
MYSQL_REPLACE_CHANGED = ", ".join(
    [*(f"{c} = IF(message_hash = VALUES(message_hash), {c}, {v})" for c, v in _MYSQL_NEW), _MYSQL_HASH]
)
ER_DUP_ENTRY, ER_LOCK_DEADLOCK = 1062, 1213

DEFAULT_STATUS_SQL = "COALESCE((SELECT default_status FROM nexus_queue_settings WHERE queue = %s), %s)"

# Claim up to N Pending, unexpired rows in FIFO order and lease them, in one statement.
CLAIM_SQL = """
UPDATE {table} SET status = 'Leased', lease_expires_at = %s, correlation_id = %s,
       attempts = attempts + 1, updated_at = %s
 WHERE {claimed_ids}
RETURNING {columns}"""
PICK_SQL = """SELECT id FROM {table} WHERE status = 'Pending' AND (expires_at IS NULL OR expires_at > %s)
               ORDER BY id LIMIT %s {lock}"""

Row = Sequence[Any]


class Listener(Protocol):
    """What a waiting loop selects on to hear of new messages."""

    def fileno(self) -> int: ...

    def received(self) -> set[str]:
        """The queue names notified since the last call."""
        ...

    def close(self) -> None: ...


_QUOTED_COLUMNS: dict[tuple[str, bool], str] = {}
_CLAIM_STATEMENTS: dict[tuple[Any, type[Any]], str] = {}  # by (vendor, queue model) and (claim, run model)


class Engine:
    """SQL that works on every engine; subclasses override what their engine does better."""

    has_copy: ClassVar[bool] = False
    """Can ``enqueue_many`` stream rows with COPY?"""

    can_listen: ClassVar[bool] = local_wakeups.AVAILABLE
    """Can idle loops listen for :meth:`notify`? (Everywhere but on platforms without UNIX sockets.)"""

    can_return_from_update: ClassVar[bool] = True
    """Can UPDATE/INSERT ... RETURNING hand back the rows it changed in the same statement?"""

    claim_lock: ClassVar[str] = ""
    """Added to the claim subquery so that concurrent leases skip each other's rows."""

    claimed_ids: ClassVar[str] = "id IN ({pick})"
    """The claim's WHERE clause: the rows whose ids the ``pick`` subquery chose."""

    held_ids: ClassVar[str] = "{held}"
    """A fenced change's WHERE clause from the ``held`` conditions, locking the rows in id order first."""

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

    # --- enqueue -------------------------------------------------------------------

    def insert_one(self, model: type[QueueItem], row: Row, *, notify: bool) -> int:
        """Insert one row; a ``None`` status means the queue's current default status. Returns its id."""
        sql, params = self._values(model, [row])
        with self.cursor() as cursor:
            cursor.execute(f"INSERT INTO {self.quote(model._meta.db_table)} {self._columns()} VALUES {sql}", params)
            if notify:
                self.notify(model.message_class.queue_name(), cursor)
            return int(cursor.lastrowid)

    def insert_many(
        self, model: type[QueueItem], rows: Sequence[Row], *, notify: bool, return_ids: bool = False
    ) -> tuple[int, ...] | None:
        """Insert rows with known statuses in batched multi-row statements (inside a transaction);
        with ``return_ids``, return their ids in the order of ``rows``."""
        table = self.quote(model._meta.db_table)
        placeholders = "(" + _marks(INSERT_COLUMNS) + ")"
        returning = " RETURNING id" if return_ids else ""
        adapt = self._memo_adapt()
        ids: list[int] = []
        with self.cursor() as cursor:
            for chunk in _chunks(rows, settings.BATCH_SIZE):
                values = ", ".join([placeholders] * len(chunk))
                params = [adapt(value) for row in chunk for value in row]
                cursor.execute(f"INSERT INTO {table} {self._columns()} VALUES {values}{returning}", params)
                if return_ids:
                    # Rows take growing ids in VALUES order; RETURNING may list them in any order.
                    ids += sorted(r[0] for r in cursor.fetchall())
            if notify:
                self.notify(model.message_class.queue_name(), cursor)
        return tuple(ids) if return_ids else None

    def upsert(self, model: type[QueueItem], rows: Sequence[Row], *, idempotent: bool, notify: bool) -> set[str]:
        """Insert or replace rows by message id; return the ids stored (idempotent duplicates are not)."""
        table = self.quote(model._meta.db_table)
        pairs = [(c, f"excluded.{c}") for c in (*REPLACED_COLUMNS, "message_hash")] + list(RESET_ON_REPLACE)
        replaced = ", ".join(f"{column} = {value}" for column, value in pairs)
        guard = f" WHERE {table}.message_hash <> excluded.message_hash" if idempotent else ""
        stored: set[str] = set()
        with self.cursor() as cursor:
            for chunk in _chunks(_by_message_id(rows), 1000):
                values, params = self._values(model, chunk)
                sql = (
                    f"INSERT INTO {table} {self._columns()} VALUES {values} ON CONFLICT (message_id) "
                    f"DO UPDATE SET {replaced}{guard} RETURNING message_id"
                )
                stored.update(r[0] for r in self._written(cursor, sql, params, model, notify))
        return stored

    def _written(self, cursor: Any, sql: str, params: list[Any], model: type[QueueItem], notify: bool) -> list[Any]:
        """Run a write ending in RETURNING; when ``notify`` and rows were written, wake listeners."""
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        if notify and rows:
            self.notify(model.message_class.queue_name(), cursor)
        return rows

    def default_status(self, model: type[QueueItem]) -> str:
        """The queue's current default enqueue status."""
        options = model.message_class.queue_options
        with self.cursor() as cursor:
            cursor.execute(f"SELECT {DEFAULT_STATUS_SQL}", [options.queue, options.default_status])
            return str(cursor.fetchone()[0])

    def notify(self, queue: str, cursor: Any = None) -> None:
        """Wake the idle loops of ``queue`` when this transaction commits: by default those on this host."""
        if local_wakeups.AVAILABLE:
            database = self.database()
            transaction.on_commit(lambda: local_wakeups.wake(database, queue), using=self.alias)

    def listen(self) -> Listener:
        """A new listener for the wake-ups of :meth:`notify` (only where :attr:`can_listen`): this host's by default."""
        return local_wakeups.LocalListener(self.database())

    def database(self) -> str:
        """Names the database (not the alias), the same in every process that uses it."""
        params = self.connection.settings_dict
        return f"{self.connection.vendor}://{params['HOST']}:{params['PORT']}/{params['NAME']}"

    def take_write_lock(self) -> None:
        """Make the open transaction take the engine's write lock now, before it reads rows it will change.

        Row locks (``SELECT ... FOR UPDATE``) do this where the engine has them: a no-op by default.
        """

    def is_deadlock(self, error: DatabaseError) -> bool:
        """Did the database roll the transaction back to break a deadlock (so that running it again is safe)?

        SQLite has no row locks: its transactions that write take the write lock first.
        """
        return False

    def update_matching(self, rows: QuerySet[Any], values: dict[str, Any]) -> int:
        """``rows.update(**values)``, taking row locks in id order first where the engine has them; the count."""
        return rows.update(**values)

    # --- lease and fenced updates ----------------------------------------------------

    def claim(
        self,
        model: type[QueueItem],
        count: int,
        *,
        now: datetime,
        lease_until: datetime,
        correlation_id: str,
        run: JobRun | None = None,
    ) -> list[QueueItem]:
        """Lease up to ``count`` Pending rows in FIFO order; return them as leased.

        When anything is leased, ``run`` (if given) is saved in the same transaction with its
        ``leased`` count, so that every leased row links to a recorded run. A row Python cannot read
        rolls the claim back, becomes Error (:mod:`~nexus_queues.quarantine`), and the claim is made
        again; not within a caller's transaction, whose rollback would undo the Error.
        """
        claim = partial(
            self._claim_recording, model, count, now=now, lease_until=lease_until, correlation_id=correlation_id,
            run=run,
        )
        if self.connection.in_atomic_block:
            return claim()
        return read_around(claim, self._claimable(model, now), count)

    def _claim_recording(
        self,
        model: type[QueueItem],
        count: int,
        *,
        now: datetime,
        lease_until: datetime,
        correlation_id: str,
        run: JobRun | None,
    ) -> list[QueueItem]:
        with transaction.atomic(using=self.alias, savepoint=False):
            items = self._claim(model, count, now=now, lease_until=lease_until, correlation_id=correlation_id)
            if items and run is not None:
                run.leased = len(items)
                run.save(using=self.alias)
        return items

    def _claimable(self, model: type[QueueItem], now: datetime) -> QuerySet[QueueItem]:
        """The rows a claim picks from, in its order: Pending and not expired."""
        unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        return model.objects.using(self.alias).pending().filter(unexpired).order_by("id")

    def _claim(
        self, model: type[QueueItem], count: int, *, now: datetime, lease_until: datetime, correlation_id: str
    ) -> list[QueueItem]:
        sql, params = self._claim_sql(model, count, now=now, lease_until=lease_until, correlation_id=correlation_id)
        with self.cursor() as cursor:
            cursor.execute(sql, params)
            return self._items(model, cursor.fetchall())

    def _claim_sql(
        self, model: type[QueueItem], count: int, *, now: datetime, lease_until: datetime, correlation_id: str
    ) -> tuple[str, list[Any]]:
        """The claim statement, returning every column of the leased rows in the model's field order."""
        key = (self.connection.vendor, model)
        if key not in _CLAIM_STATEMENTS:
            columns = ", ".join(self.quote(str(f.column)) for f in model._meta.concrete_fields)
            table = self.quote(model._meta.db_table)
            pick = PICK_SQL.format(table=table, lock=self.claim_lock)
            claimed_ids = self.claimed_ids.format(pick=pick)
            _CLAIM_STATEMENTS[key] = CLAIM_SQL.format(table=table, claimed_ids=claimed_ids, columns=columns)
        params = [self.adapt(lease_until), correlation_id, self.adapt(now), self.adapt(now), count]
        return _CLAIM_STATEMENTS[key], params

    def _items(self, model: type[QueueItem], rows: Sequence[Row]) -> list[QueueItem]:
        """Model instances, in FIFO order, of rows holding every column in the model's field order.

        Built as a queryset would build them (the fields' and the backend's converters), without a
        queryset's cost per statement, which is most of a single-message lease's time in Python.
        """
        converters = _converters(self.connection, model)
        names = [f.attname for f in model._meta.concrete_fields]
        items = []
        for row in rows:
            values = list(row)
            for i, column, column_converters in converters:
                for convert in column_converters:
                    values[i] = convert(values[i], column, self.connection)
            items.append(model.from_db(self.alias, names, values))
        return sorted(items, key=lambda item: item.pk)

    def update_leased(
        self, model: type[QueueItem], ids: Sequence[int], correlation_id: str, assignments: str, params: Sequence[Any]
    ) -> list[int]:
        """Apply ``SET assignments`` to the rows still leased by ``correlation_id``; return their ids."""
        table = self.quote(model._meta.db_table)
        where, where_params = self._held(table, ids, correlation_id)
        with self.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET {assignments} WHERE {where} RETURNING id", [*params, *where_params])
            return [r[0] for r in cursor.fetchall()]

    def delete_leased(self, model: type[QueueItem], ids: Sequence[int], correlation_id: str) -> list[int]:
        """Delete the rows still leased by ``correlation_id``; return their ids."""
        table = self.quote(model._meta.db_table)
        where, params = self._held(table, ids, correlation_id)
        with self.cursor() as cursor:
            cursor.execute(f"DELETE FROM {table} WHERE {where} RETURNING id", params)
            return [r[0] for r in cursor.fetchall()]

    # --- helpers ---------------------------------------------------------------------

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

    def _values(self, model: type[QueueItem], rows: Sequence[Row]) -> tuple[str, list[Any]]:
        """VALUES tuples for ``rows``; a ``None`` status becomes the default-status subquery."""
        options = model.message_class.queue_options
        adapt = self._memo_adapt()
        tuples, params = [], []
        for row in rows:
            slots = ["%s"] * len(INSERT_COLUMNS)
            values = [adapt(value) for value in row]
            if row[STATUS_INDEX] is None:
                slots[STATUS_INDEX] = DEFAULT_STATUS_SQL
                values[STATUS_INDEX : STATUS_INDEX + 1] = [options.queue, options.default_status]
            tuples.append("(" + ", ".join(slots) + ")")
            params.extend(values)
        return ", ".join(tuples), params

    def _leased_where(self, ids: Sequence[int], correlation_id: str) -> tuple[str, list[Any]]:
        return f"id IN ({_marks(ids)}) AND status = '{Status.LEASED}' AND correlation_id = %s", [*ids, correlation_id]

    def _held(self, table: str, ids: Sequence[int], correlation_id: str) -> tuple[str, list[Any]]:
        where, params = self._leased_where(ids, correlation_id)
        return self.held_ids.format(table=table, held=where), params

    def message_search_index_sql(self, table: str, name: str) -> list[str]:
        """Statements creating an index for the admin's text search in messages; [] where the engine has none."""
        return []

    def drop_message_search_index_sql(self, table: str, name: str) -> list[str]:
        """Statements dropping that index."""
        return []


class PostgresEngine(Engine):
    """PostgreSQL: COPY for bulk enqueue, SKIP LOCKED claims, LISTEN/NOTIFY wake-ups."""

    has_copy = True
    can_listen = True  # LISTEN/NOTIFY: wake-ups from every host
    claim_lock = "FOR UPDATE SKIP LOCKED"
    # An array of ids is looked up by primary key; IN (subquery) plans a hash join over the whole table.
    claimed_ids = "id = ANY(ARRAY({pick}))"
    # A plain UPDATE locks rows in its plan's order (a bitmap scan's is the heap's); the sorted
    # subquery locks them in id order, as update_status does, so the two never wait on each other.
    held_ids = "id = ANY(ARRAY(SELECT id FROM {table} WHERE {held} ORDER BY id FOR UPDATE))"

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        """A server-side-binding psycopg cursor on Django's connection, whatever Django's own binding.

        With ``PREPARED_STATEMENTS`` its statements are prepared, so the server parses and plans each
        enqueue, lease and acknowledgement once per connection (planning the lease alone costs more
        than running it). Driver errors still become Django's.
        """
        self.connection.ensure_connection()
        driver_connection = self.connection.connection
        prepare = settings.PREPARED_STATEMENTS
        if prepare and driver_connection.prepare_threshold is None:
            # Django turns psycopg's preparing off (None); a threshold never reached turns it back on
            # for the statements that ask for it, and for them only.
            driver_connection.prepare_threshold = NEVER_BY_COUNT
        with self.connection.wrap_database_errors, _cursor_class(prepare)(driver_connection) as cursor:
            yield cursor

    def insert_many(
        self, model: type[QueueItem], rows: Sequence[Row], *, notify: bool, return_ids: bool = False
    ) -> tuple[int, ...] | None:
        # COPY returns nothing: asked for ids, take them from the sequence first (one statement) and COPY them too.
        adapt = self._memo_adapt()
        table = self.quote(model._meta.db_table)
        with self.cursor() as cursor:
            ids = self._next_ids(cursor, table, len(rows)) if return_ids else None
            with cursor.copy(f"COPY {table} {self._columns(with_id=return_ids)} FROM STDIN") as copy:
                if ids is None:
                    for row in rows:
                        copy.write_row([adapt(value) for value in row])
                else:
                    for row_id, row in zip(ids, rows, strict=True):
                        copy.write_row([row_id, *[adapt(value) for value in row]])
            if notify:
                self.notify(model.message_class.queue_name(), cursor)
        return ids

    def _next_ids(self, cursor: Any, table: str, count: int) -> tuple[int, ...]:
        """``count`` new ids from the table's id sequence, growing."""
        # The sequence's name in FROM, so that it is looked up once rather than once per id.
        cursor.execute(
            "SELECT nextval(seq) FROM pg_get_serial_sequence(%s, 'id') AS seq, generate_series(1, %s)", [table, count]
        )
        return tuple(sorted(r[0] for r in cursor.fetchall()))

    def insert_one(self, model: type[QueueItem], row: Row, *, notify: bool) -> int:
        values, params = self._values(model, [row])
        sql = f"INSERT INTO {self.quote(model._meta.db_table)} {self._columns()} VALUES {values} RETURNING id"
        with self.cursor() as cursor:
            return int(self._written(cursor, sql, params, model, notify)[0][0])

    def claim(
        self,
        model: type[QueueItem],
        count: int,
        *,
        now: datetime,
        lease_until: datetime,
        correlation_id: str,
        run: JobRun | None = None,
    ) -> list[QueueItem]:
        try:
            return self._claim_recording(
                model, count, now=now, lease_until=lease_until, correlation_id=correlation_id, run=run
            )
        except UNREADABLE:
            # The claim committed before its rows were read: rather than leave them Leased, the unreadable
            # ones become Error and the others are read back. Only a failed claim pays for this.
            items = self._read_back(model, count, correlation_id, run)
            if items is None:
                raise
            return items

    def _claim_recording(
        self,
        model: type[QueueItem],
        count: int,
        *,
        now: datetime,
        lease_until: datetime,
        correlation_id: str,
        run: JobRun | None,
    ) -> list[QueueItem]:
        if run is None:
            return self._claim(model, count, now=now, lease_until=lease_until, correlation_id=correlation_id)
        # One statement, so one round trip and one commit: the claim, and the run's row if it leased anything.
        claim_sql, params = self._claim_sql(
            model, count, now=now, lease_until=lease_until, correlation_id=correlation_id
        )
        fields = [f for f in run._meta.local_concrete_fields if not f.primary_key]
        params += [
            f.get_db_prep_save(getattr(run, f.attname), self.connection) for f in fields if f.attname != "leased"
        ]
        key = (claim_sql, type(run))
        if key not in _CLAIM_STATEMENTS:
            columns = ", ".join(self.quote(str(f.column)) for f in fields)
            values = ", ".join("count(*)" if f.attname == "leased" else "%s" for f in fields)
            _CLAIM_STATEMENTS[key] = (
                f"WITH claimed AS ({claim_sql}), "
                f"run AS (INSERT INTO {self.quote(run._meta.db_table)} ({columns}) "
                f"SELECT {values} FROM claimed HAVING count(*) > 0 RETURNING id) "
                "SELECT claimed.*, (SELECT id FROM run) FROM claimed"
            )
        with self.cursor() as cursor:
            cursor.execute(_CLAIM_STATEMENTS[key], params)
            rows = cursor.fetchall()
        if rows:
            run.pk, run.leased = rows[0][-1], len(rows)
            run._state.adding, run._state.db = False, self.alias
        return self._items(model, [row[:-1] for row in rows])

    def _read_back(
        self, model: type[QueueItem], count: int, correlation_id: str, run: JobRun | None
    ) -> list[QueueItem] | None:
        """The rows a claim leased, once those Python cannot read are Error; None when none of them was.

        The run counts the Error rows as leased and failed, and is finished when no row is left.
        """
        leased = model.objects.using(self.alias).leased().filter(correlation_id=correlation_id)
        errors = quarantine(leased, count)
        if not errors:
            return None
        items = list(leased)
        if run is not None:
            run.pk = type(run).objects.using(self.alias).values_list("pk", flat=True).get(correlation_id=correlation_id)
            run._state.adding, run._state.db = False, self.alias
            run.leased, run.errors, run.finished_at = len(items) + errors, errors, None if items else timezone.now()
            run.save(using=self.alias, update_fields=["errors", "finished_at"])
        return items

    def is_deadlock(self, error: DatabaseError) -> bool:
        return getattr(error.__cause__, "sqlstate", None) == "40P01"  # deadlock_detected

    def update_matching(self, rows: QuerySet[Any], values: dict[str, Any]) -> int:
        # The sorted subquery takes the row locks in id order; the UPDATE then changes rows it holds.
        try:
            sql, params = rows.order_by("pk").values("pk").query.get_compiler(using=self.alias).as_sql()
        except EmptyResultSet:  # a filter Django knows matches nothing (pk__in=[])
            return 0
        locked = RawSQL(f"{sql} FOR UPDATE", params)
        return rows.model._default_manager.using(self.alias).filter(pk__in=locked).update(**values)

    def _leased_where(self, ids: Sequence[int], correlation_id: str) -> tuple[str, list[Any]]:
        # One statement text whatever the batch size, so psycopg prepares it once.
        return f"id = ANY(%s) AND status = '{Status.LEASED}' AND correlation_id = %s", [list(ids), correlation_id]

    def message_search_index_sql(self, table: str, name: str) -> list[str]:
        # A trigram index on exactly the expression Django's JSON icontains searches.
        return [
            "CREATE EXTENSION IF NOT EXISTS pg_trgm",
            f"CREATE INDEX IF NOT EXISTS {self.quote(name)} ON {self.quote(table)} "
            "USING gin ((UPPER(message::text)) gin_trgm_ops)",
        ]

    def drop_message_search_index_sql(self, table: str, name: str) -> list[str]:
        return [f"DROP INDEX IF EXISTS {self.quote(name)}"]

    def _written(self, cursor: Any, sql: str, params: list[Any], model: type[QueueItem], notify: bool) -> list[Any]:
        # One round trip: the NOTIFY rides in the same statement (PostgreSQL folds repeats).
        if notify:
            sql = f"WITH written AS ({sql}) SELECT written.*, pg_notify(%s, %s) FROM written"
            params = [*params, settings.NOTIFY_CHANNEL, model.message_class.queue_name()]
        cursor.execute(sql, params)
        return cursor.fetchall()

    def notify(self, queue: str, cursor: Any = None) -> None:
        if cursor is None:
            with self.cursor() as own:
                return self.notify(queue, own)
        cursor.execute("SELECT pg_notify(%s, %s)", [settings.NOTIFY_CHANNEL, queue])

    def listen(self) -> Listener:
        import psycopg

        params = self.connection.get_connection_params()
        kept = {k: params[k] for k in ("dbname", "user", "password", "host", "port", "sslmode") if k in params}
        connection = psycopg.connect(**kept, autocommit=True)
        connection.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(settings.NOTIFY_CHANNEL)))
        return _NotifyListener(connection)


class _NotifyListener:
    """A LISTENing psycopg connection, read like a local listener; it hears every host's enqueues."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def fileno(self) -> int:
        return int(self.connection.fileno())

    def received(self) -> set[str]:
        return {notice.payload for notice in self.connection.notifies(timeout=0)}

    def close(self) -> None:
        self.connection.close()


class SQLiteEngine(Engine):
    """SQLite: every write takes the database lock, so one UPDATE ... RETURNING claims safely."""

    def database(self) -> str:
        return f"sqlite://{os.path.abspath(self.connection.settings_dict['NAME'])}"

    def take_write_lock(self) -> None:
        # A deferred transaction that reads first deadlocks with another reader when both upgrade
        # to write ("database is locked" at once); a write that matches nothing takes the lock now.
        with self.cursor() as cursor:
            cursor.execute("UPDATE nexus_queue_settings SET queue = queue WHERE 1 = 0")


class MySQLEngine(Engine):
    """MariaDB/MySQL: SKIP LOCKED claims in a transaction; no UPDATE ... RETURNING."""

    can_return_from_update = False
    claim_lock = "FOR UPDATE SKIP LOCKED"

    def insert_many(
        self, model: type[QueueItem], rows: Sequence[Row], *, notify: bool, return_ids: bool = False
    ) -> tuple[int, ...] | None:
        if not return_ids or self.connection.features.can_return_rows_from_bulk_insert:
            return super().insert_many(model, rows, notify=notify, return_ids=return_ids)
        # MySQL (not MariaDB) has no INSERT ... RETURNING: each row's own insert tells its id.
        last = len(rows) - 1
        return tuple(self.insert_one(model, row, notify=notify and i == last) for i, row in enumerate(rows))

    def is_deadlock(self, error: DatabaseError) -> bool:
        return error.args[:1] == (ER_LOCK_DEADLOCK,)

    def upsert(self, model: type[QueueItem], rows: Sequence[Row], *, idempotent: bool, notify: bool) -> set[str]:
        table = self.quote(model._meta.db_table)
        rows = _by_message_id(rows)
        if not idempotent:
            with self.cursor() as cursor:
                for chunk in _chunks(rows, 1000):
                    self._insert(cursor, model, table, chunk, f" ON DUPLICATE KEY UPDATE {MYSQL_REPLACE}")
            stored = {row[0] for row in rows}
        elif len(rows) == 1:
            with self.cursor() as cursor:
                stored = self._upsert_one(cursor, model, table, rows[0])
        else:
            with transaction.atomic(using=self.alias, savepoint=False), self.cursor() as cursor:
                stored = set().union(*(self._store_changed(cursor, model, table, c) for c in _chunks(rows, 1000)))
        if notify and stored:
            self.notify(model.message_class.queue_name())
        return stored

    def _upsert_one(self, cursor: Any, model: type[QueueItem], table: str, row: Row) -> set[str]:
        """Store one row unless the same JSON is stored under its id; ``{its id}`` if stored."""
        self._insert(cursor, model, table, [row], f" ON DUPLICATE KEY UPDATE {MYSQL_REPLACE_CHANGED}")
        # Affected rows are 2 for a replaced row, and 1 for a new or an unchanged one: only a new one has an id.
        return {row[0]} if cursor.rowcount == 2 or cursor.lastrowid else set()

    def _store_changed(
        self, cursor: Any, model: type[QueueItem], table: str, rows: Sequence[Row], race: IntegrityError | None = None
    ) -> set[str]:
        """Store the rows whose id is new or whose JSON changed (in a transaction); the ids stored.

        Decided on locked rows, so that callers racing with the same message count it stored
        once (INSERT ... ON DUPLICATE KEY UPDATE decides per row but does not say how).
        """
        stored_hashes = self._locked_hashes(cursor, table, rows)
        new = [row for row in rows if row[0] not in stored_hashes]
        if race is not None and len(new) == len(rows):
            raise race  # no stored id explains the duplicate: the column's collation equates two ids
        changed = [row for row in rows if stored_hashes.get(row[0], row[2]) != row[2]]
        if changed:
            self._insert(cursor, model, table, changed, f" ON DUPLICATE KEY UPDATE {MYSQL_REPLACE}")
        try:
            if new:
                self._insert(cursor, model, table, new)
        except IntegrityError as exc:
            if exc.args[:1] != (ER_DUP_ENTRY,):
                raise
            # Another caller stored one of these ids after the read (a row not there is not locked);
            # InnoDB undid this statement alone: read them again, locked now.
            return {row[0] for row in changed} | self._store_changed(cursor, model, table, new, exc)
        return {row[0] for row in (*changed, *new)}

    def _locked_hashes(self, cursor: Any, table: str, rows: Sequence[Row]) -> dict[str, str]:
        """The stored hash by message id of those stored, the rows locked (an uncommitted new one waited for)."""
        ids = [row[0] for row in rows]
        sql = f"SELECT message_id, message_hash FROM {table} WHERE message_id IN ({_marks(ids)}) FOR UPDATE"
        cursor.execute(sql, ids)
        return dict(cursor.fetchall())

    def _insert(self, cursor: Any, model: type[QueueItem], table: str, rows: Sequence[Row], suffix: str = "") -> None:
        values, params = self._values(model, rows)
        cursor.execute(f"INSERT INTO {table} {self._columns()} VALUES {values}{suffix}", params)

    def _claim(
        self, model: type[QueueItem], count: int, *, now: datetime, lease_until: datetime, correlation_id: str
    ) -> list[QueueItem]:
        manager = model.objects.using(self.alias)
        items = list(self._claimable(model, now).select_for_update(skip_locked=True)[:count])
        changes = {
            "status": Status.LEASED,
            "lease_expires_at": lease_until,
            "correlation_id": correlation_id,
            "updated_at": now,
        }
        manager.filter(pk__in=[i.pk for i in items]).update(attempts=F("attempts") + 1, **changes)
        for item in items:
            item.__dict__.update(changes, attempts=item.attempts + 1)
        return items

    def update_leased(
        self, model: type[QueueItem], ids: Sequence[int], correlation_id: str, assignments: str, params: Sequence[Any]
    ) -> list[int]:
        table = self.quote(model._meta.db_table)
        with transaction.atomic(using=self.alias, savepoint=False), self.cursor() as cursor:
            held = self._lock_held(cursor, table, ids, correlation_id)
            if held:
                cursor.execute(f"UPDATE {table} SET {assignments} WHERE {_just(held)}", [*params, *held])
        return held

    def delete_leased(self, model: type[QueueItem], ids: Sequence[int], correlation_id: str) -> list[int]:
        table = self.quote(model._meta.db_table)
        with transaction.atomic(using=self.alias, savepoint=False), self.cursor() as cursor:
            held = self._lock_held(cursor, table, ids, correlation_id)
            if held:
                cursor.execute(f"DELETE FROM {table} WHERE {_just(held)}", held)
        return held

    def update_matching(self, rows: QuerySet[Any], values: dict[str, Any]) -> int:
        table = self.quote(rows.model._meta.db_table)
        changed = 0
        with transaction.atomic(using=self.alias, savepoint=False), self.cursor() as cursor:
            for chunk in _chunks(list(rows.order_by("pk").values_list("pk", flat=True)), 1000):
                cursor.execute(f"SELECT id FROM {table} WHERE {_just(chunk)} FOR UPDATE", chunk)
                changed += rows.filter(pk__in=chunk).update(**values)
        return changed

    def _lock_held(self, cursor: Any, table: str, ids: Sequence[int], correlation_id: str) -> list[int]:
        """Lock the rows still leased by ``correlation_id``, by primary key in id order; their ids."""
        # Through the status index InnoDB would lock the index entry before the row: the reverse of
        # a change that finds its rows by primary key (update_status), and the two deadlock on one row.
        where, params = self._leased_where(ids, correlation_id)
        limit = f"ORDER BY id LIMIT {len(ids)}"
        cursor.execute(f"SELECT id FROM {table} FORCE INDEX (PRIMARY) WHERE {where} {limit} FOR UPDATE", params)
        return [r[0] for r in cursor.fetchall()]


_ENGINES: dict[str, type[Engine]] = {"postgresql": PostgresEngine, "mysql": MySQLEngine, "sqlite": SQLiteEngine}


def engine_for(alias: str) -> Engine:
    """The engine of database ``alias``."""
    connection = connections[alias]
    try:
        return _ENGINES[connection.vendor](connection)
    except KeyError:
        raise ConfigurationError(
            f"Database {alias!r} uses {connection.vendor}; nexus_queues supports PostgreSQL, MariaDB/MySQL and SQLite."
        ) from None


_CONVERTERS: dict[tuple[str, type[Any]], list[tuple[int, Any, list[Any]]]] = {}


def _converters(connection: BaseDatabaseWrapper, model: type[QueueItem]) -> list[tuple[int, Any, list[Any]]]:
    """Per column position of ``model``'s rows, the converters from database values to Python ones."""
    key = (connection.alias, model)
    if key not in _CONVERTERS:
        found = []
        for i, field in enumerate(model._meta.concrete_fields):
            column = field.get_col(model._meta.db_table)
            convert = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if convert:
                found.append((i, column, convert))
        _CONVERTERS[key] = found
    return _CONVERTERS[key]


NEVER_BY_COUNT = 1 << 62
"""A psycopg ``prepare_threshold`` no statement reaches: only those executed with ``prepare=True`` are prepared."""


@cache
def _cursor_class(prepare: bool) -> type:
    """A server-side-binding psycopg cursor class, preparing every statement or none; defined on
    first use so that psycopg is imported only for PostgreSQL."""
    import psycopg

    class Cursor(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            return super().execute(query, params, **{"prepare": prepare, **kwargs})

    return Cursor


def _chunks(rows: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def _marks(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def _just(ids: Sequence[int]) -> str:
    """MariaDB/MySQL: the rows ``ids`` in id order, and no further (InnoDB reads on to the next row, and
    waits for it if another transaction holds it: two completions of neighbouring rows would deadlock)."""
    return f"id IN ({_marks(ids)}) ORDER BY id LIMIT {len(ids)}"


def _by_message_id(rows: Sequence[Row]) -> list[Row]:
    """Rows in message id order: concurrent upserts then lock the ids they share in the same order."""
    return sorted(rows, key=itemgetter(0))
