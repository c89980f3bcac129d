"""MariaDB/MySQL: SKIP LOCKED claims in a transaction; no UPDATE ... RETURNING."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import QuerySet

from ..changes import Change
from .base import Backend
from .budget import Budget
from .features import MySQLFeatures
from .jdbc import MariaDBJdbc
from .rows import Claim, EnqueueRow, by_message_id
from .session import chunks, lock_key
from .statements import marks
from .statements.mysql import MySQLStatements

if TYPE_CHECKING:
    from ..models import QueueItem

ER_DUP_ENTRY, ER_LOCK_DEADLOCK = 1062, 1213
LOST = {(code,) for code in (1053, 1927, 2003, 2006, 2013, 2055, 4031)}
"""The errors of a lost connection: the server shutting down, the connection killed, refused, gone away, lost during
a query or a read, closed as idle."""
REFUSED_SETTINGS = frozenset({1044, 1045, 1049, 1130, 1698})
"""The server's refusals of a connection's settings: no access to the database, wrong user or password, an unknown
database, a host not allowed, a user without a password given."""
TURN_WAIT = 365 * 24 * 3600
"""Seconds a merge waits for its turn (GET_LOCK needs a number): as long as the merges before it take."""
ROW_LOCK_WAIT = 1073741824
"""innodb_lock_wait_timeout during a merge, its maximum: a merge waits for a row as long as its holder keeps it."""
HEADROOM = 64 * 1024
"""Bytes of ``max_allowed_packet`` kept for a statement's SQL around its rows, and the packet's header."""
_BUDGETS: WeakKeyDictionary[Any, Budget] = WeakKeyDictionary()
"""The budget of each open driver connection: the server fixes a session's packet size when it connects."""


def packet_budget(packet: int) -> Budget:
    """The budget of a session whose ``max_allowed_packet`` is ``packet`` bytes."""
    room = packet - min(HEADROOM, packet // 4)
    return Budget(row_bytes=room, statement_bytes=room, limit=f"max_allowed_packet {packet:,}")


class MySQLBackend(Backend):
    """MariaDB/MySQL: SKIP LOCKED claims in a transaction; no UPDATE ... RETURNING."""

    features = MySQLFeatures
    sql = MySQLStatements
    jdbc_driver = MariaDBJdbc

    def budget(self) -> Budget:
        """Statements within the session's ``max_allowed_packet``, read from the server once per connection."""
        self.connection.ensure_connection()
        raw = self.connection.connection
        if raw not in _BUDGETS:
            with self.cursor() as cursor:
                cursor.execute(self.sql.PACKET.text)
                _BUDGETS[raw] = packet_budget(int(cursor.fetchone()[0]))
        return _BUDGETS[raw]

    def insert_many(
        self,
        model: type[QueueItem],
        rows: Sequence[EnqueueRow],
        *,
        default_status: str | None = None,
        notify: bool,
        return_ids: bool = False,
    ) -> tuple[int, ...] | None:
        if not return_ids or self.connection.features.can_return_rows_from_bulk_insert:
            return super().insert_many(
                model, rows, default_status=default_status, notify=notify, return_ids=return_ids
            )
        # MySQL (not MariaDB) has no INSERT ... RETURNING: each row's own insert tells its id.
        if default_status is not None:
            rows = [row if row.status is not None else row._replace(status=default_status) for row in rows]
        last = len(rows) - 1
        return tuple(self.insert_one(model, row, notify=notify and i == last) for i, row in enumerate(rows))

    def is_deadlock(self, error: DatabaseError) -> bool:
        return error.args[:1] == (ER_LOCK_DEADLOCK,)

    def lost(self, error: DatabaseError | InterfaceError) -> bool:
        return super().lost(error) or (isinstance(error, OperationalError) and error.args[:1] in LOST)

    def refuses_settings(self, error: Exception) -> bool:
        return bool(error.args) and error.args[0] in REFUSED_SETTINGS

    def upsert(
        self, model: type[QueueItem], rows: Sequence[EnqueueRow], *, idempotent: bool, notify: bool
    ) -> set[str]:
        table = self.quote(model._meta.db_table)
        rows = by_message_id(rows)
        if not idempotent:
            with self.cursor() as cursor:
                for chunk in self.budget().batches(rows, 1000):
                    self._insert(cursor, model, table, chunk, " " + self.sql.REPLACE.text)
            stored = {_id(row) for row in rows}
        elif len(rows) == 1:
            self.budget().check(rows)
            with self.cursor() as cursor:
                stored = self._upsert_one(cursor, model, table, rows[0])
        else:
            batches = self.budget().batches(rows, 1000)
            with transaction.atomic(using=self.alias, savepoint=False), self.cursor() as cursor:
                stored = set().union(*(self._store_changed(cursor, model, table, c) for c in batches))
        if notify and stored:
            self.notify(model.message_class.queue_name())
        return stored

    def _upsert_one(self, cursor: Any, model: type[QueueItem], table: str, row: EnqueueRow) -> set[str]:
        """Store one row unless the same JSON is stored under its id; ``{its id}`` if stored."""
        self._insert(cursor, model, table, [row], " " + self.sql.REPLACE_CHANGED.text)
        # Affected rows are 2 for a replaced row, and 1 for a new or an unchanged one: only a new one has an id.
        return {_id(row)} if cursor.rowcount == 2 or cursor.lastrowid else set()

    def _store_changed(
        self,
        cursor: Any,
        model: type[QueueItem],
        table: str,
        rows: Sequence[EnqueueRow],
        race: IntegrityError | None = None,
    ) -> set[str]:
        """Store the rows whose id is new or whose JSON changed (in a transaction); the ids stored.

        Decided on locked rows, so that callers racing with the same message count it stored
        once (INSERT ... ON DUPLICATE KEY UPDATE decides per row but does not say how).
        """
        stored_hashes = self._locked_hashes(cursor, table, rows)
        new = [row for row in rows if row.message_id not in stored_hashes]
        if race is not None and len(new) == len(rows):
            raise race  # no stored id explains the duplicate: the column's collation equates two ids
        changed = [row for row in rows if stored_hashes.get(_id(row), row.message_hash) != row.message_hash]
        if changed:
            self._insert(cursor, model, table, changed, " " + self.sql.REPLACE.text)
        try:
            if new:
                self._insert(cursor, model, table, new)
        except IntegrityError as exc:
            if exc.args[:1] != (ER_DUP_ENTRY,):
                raise
            # Another caller stored one of these ids after the read (a row not there is not locked);
            # InnoDB undid this statement alone: read them again, locked now.
            return {_id(row) for row in changed} | self._store_changed(cursor, model, table, new, exc)
        return {_id(row) for row in (*changed, *new)}

    def _locked_hashes(self, cursor: Any, table: str, rows: Sequence[EnqueueRow]) -> dict[str, str]:
        """The stored hash by message id of those stored, the rows locked (an uncommitted new one waited for)."""
        ids = [row.message_id for row in rows]
        cursor.execute(self.sql.LOCKED_HASHES.format(table=table, ids=marks(ids)), ids)
        return dict(cursor.fetchall())

    def _insert(
        self, cursor: Any, model: type[QueueItem], table: str, rows: Sequence[EnqueueRow], suffix: str = ""
    ) -> None:
        values, params = self._values(model, rows)
        cursor.execute(self.sql.INSERT.format(table=table, columns=self._columns(), values=values, then=suffix), params)

    def _staged_upsert(self, queue: str, *, idempotent: bool) -> str:
        return self.sql.REPLACE_CHANGED_IN.format(queue=queue) if idempotent else self.sql.REPLACE.text

    @contextmanager
    def merge_turn(self, table: str, on_wait: Callable[[], None]) -> Iterator[None]:
        # Released once the transaction ends.
        name = self._lock_name(f"merge.{table}")
        with self.cursor() as cursor:
            cursor.execute(self.sql.TRY_LOCK.text, [name])
            if cursor.fetchone()[0] != 1:
                on_wait()
                cursor.execute(self.sql.WAIT_LOCK.text, [name, TURN_WAIT])
                if cursor.fetchone()[0] != 1:
                    raise DatabaseError(f"Waited {TURN_WAIT} s for the merge before this one into {table}.")
        try:
            # Every statement of the merge waits for its row locks: the batch members it moves, its merge, the
            # batches it counts. With the server's 50 s a lock held longer failed one statement (1205), and the sync.
            with self.patient_row_locks(), transaction.atomic(using=self.alias):
                yield
        finally:
            with suppress(DatabaseError), self.cursor() as cursor:  # a lost connection released it
                cursor.execute(self.sql.RELEASE_LOCK.text, [name])

    @contextmanager
    def hold(self, name: str) -> Iterator[None]:
        named = self._lock_name(name)
        with self.cursor() as cursor:
            cursor.execute(self.sql.TRY_LOCK.text, [named])
            if cursor.fetchone()[0] != 1:
                raise DatabaseError(f"Lock {name} is held by another connection.")
        try:
            yield
        finally:
            with suppress(DatabaseError), self.cursor() as cursor:
                cursor.execute(self.sql.RELEASE_LOCK.text, [named])

    def held(self, names: Collection[str]) -> set[str]:
        ordered = list(names)
        if not ordered:
            return set()
        with self.cursor() as cursor:
            used = ", ".join([self.sql.USED_LOCK.text] * len(ordered))
            cursor.execute(self.sql.USED_LOCKS.format(used=used), [self._lock_name(name) for name in ordered])
            holders = cursor.fetchone()
        return {name for name, holder in zip(ordered, holders, strict=True) if holder is not None}

    def _lock_name(self, name: str) -> str:
        """A GET_LOCK name (at most 64 characters, server-wide): ``name`` on this database."""
        return f"nexus_queues.{lock_key(self.connection.settings_dict['NAME'] + '.' + name)}.{name}"[:64]

    def by_code_point(self, column: str) -> str:
        # Binary and without padding ('a' = 'a ' is true under PAD SPACE); a text of another charset converted first.
        mariadb = self.connection.mysql_is_mariadb  # type: ignore[attr-defined]
        collation = "utf8mb4_nopad_bin" if mariadb else "utf8mb4_0900_bin"
        return f"CONVERT({column} USING utf8mb4) COLLATE {collation}"

    @contextmanager
    def patient_row_locks(self) -> Iterator[None]:
        with self.cursor() as cursor:
            cursor.execute(self.sql.LOCK_WAIT.text)
            before = cursor.fetchone()[0]
            cursor.execute(self.sql.SET_LOCK_WAIT.text, [ROW_LOCK_WAIT])
        try:
            yield
        finally:
            with suppress(DatabaseError), self.cursor() as cursor:
                cursor.execute(self.sql.SET_LOCK_WAIT.text, [before])

    def _claim(self, claim: Claim) -> list[QueueItem]:
        rows = self._claimable(claim.model, claim.now).select_for_update(skip_locked=True)[: claim.count]
        return self._lease_rows(claim, list(rows))

    def update_leased(
        self, model: type[QueueItem], ids: Sequence[int], correlation_id: str, change: Change
    ) -> list[int]:
        table = self.quote(model._meta.db_table)
        assignments, params = self._set(change)
        with transaction.atomic(using=self.alias, savepoint=False), self.cursor() as cursor:
            held = self._lock_held(cursor, table, ids, correlation_id)
            if held:
                sql = self.sql.UPDATE_JUST.format(table=table, assignments=assignments, just=self._just(held))
                cursor.execute(sql, [*params, *held])
        return held

    def delete_leased(self, model: type[QueueItem], ids: Sequence[int], correlation_id: str) -> list[int]:
        table = self.quote(model._meta.db_table)
        with transaction.atomic(using=self.alias, savepoint=False), self.cursor() as cursor:
            held = self._lock_held(cursor, table, ids, correlation_id)
            if held:
                cursor.execute(self.sql.DELETE_JUST.format(table=table, just=self._just(held)), held)
        return held

    def update_matching(self, rows: QuerySet[Any], values: dict[str, Any]) -> int:
        table = self.quote(rows.model._meta.db_table)
        changed = 0
        with transaction.atomic(using=self.alias, savepoint=False), self.cursor() as cursor:
            for chunk in chunks(list(rows.order_by("pk").values_list("pk", flat=True)), 1000):
                cursor.execute(self.sql.LOCK_JUST.format(table=table, just=self._just(chunk)), chunk)
                changed += rows.filter(pk__in=chunk).update(**values)
        return changed

    def _just(self, ids: Sequence[int]) -> str:
        return self.sql.JUST.format(ids=marks(ids), count=len(ids))

    def _lock_held(self, cursor: Any, table: str, ids: Sequence[int], correlation_id: str) -> list[int]:
        """Lock the rows still leased by ``correlation_id``, by primary key in id order; their ids."""
        where, params = self._leased_where(ids, correlation_id)
        cursor.execute(self.sql.LOCK_HELD.format(table=table, where=where, count=len(ids)), params)
        return [r[0] for r in cursor.fetchall()]


def _id(row: EnqueueRow) -> str:
    return str(row.message_id)
