"""PostgreSQL: COPY for bulk enqueue, SKIP LOCKED claims, prepared statements, LISTEN/NOTIFY wake-ups."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from django.core.exceptions import EmptyResultSet
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, models, transaction
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from ..conf import settings
from ..quarantine import UNREADABLE, quarantine
from . import copy_text
from .base import CLAIM_STATEMENTS, Backend
from .cursors import copy_rows, prepared_cursor
from .features import PostgresFeatures
from .jdbc import PostgresJdbc
from .rows import STAGED_COLUMNS, Claim, EnqueueRow, Finish, MergeCounts, StagedRow
from .session import lock_key
from .statements.postgresql import PostgresStatements
from .transports import Listener, NotifyListener

if TYPE_CHECKING:
    from datetime import datetime

    from ..models import JobRun, QueueItem

MERGE_LOCK_SPACE = 0x6E710001
"""The first key of the advisory locks by which merges into one queue take turns (the second: the table's)."""
CONNECTION_EXCEPTION, SHUTTING_DOWN = "08", {"57P01", "57P02", "57P03"}
"""The SQLSTATEs of a lost connection: class 08, and the server shutting down (admin, crash) or starting up."""
HELD_LOCK_SPACE = 0x6E710002
"""The first key of the session advisory locks of :meth:`PostgresBackend.hold` (the second: the name's)."""

REFUSED_SETTINGS = re.compile(
    r'database ".*" does not exist|role ".*" does not exist|password authentication failed|no pg_hba\.conf entry'
    r"|no password supplied|no such database|no such user"
)
"""What the server (or PgBouncer) says when it refuses a connection's settings: libpq gives no SQLSTATE for an
error met while connecting, only the text (a server whose lc_messages is not English is retried as if down)."""


class PostgresBackend(Backend):
    """PostgreSQL: COPY for bulk enqueue, SKIP LOCKED claims, LISTEN/NOTIFY wake-ups."""

    features = PostgresFeatures
    sql = PostgresStatements
    jdbc_driver = PostgresJdbc

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        """A server-side-binding psycopg cursor on Django's connection, seen by Django's query log and
        execute wrappers; with ``PREPARED_STATEMENTS`` its statements are prepared."""
        with prepared_cursor(self.connection, settings.PREPARED_STATEMENTS) as cursor:
            yield cursor

    def insert_many(
        self,
        model: type[QueueItem],
        rows: Sequence[EnqueueRow],
        *,
        default_status: str | None = None,
        notify: bool,
        return_ids: bool = False,
    ) -> tuple[int, ...] | None:
        # COPY returns nothing: asked for ids, take them from the sequence first (one statement) and COPY them too.
        table = self.quote(model._meta.db_table)

        def write(copy: Any) -> None:
            for chunk in copy_text.chunks(rows, default_status, ids):
                copy.write(chunk)

        with self.cursor() as cursor:
            ids = self._next_ids(cursor, table, len(rows)) if return_ids else None
            copy_rows(cursor, self.sql.COPY.format(table=table, columns=self._columns(with_id=return_ids)), write)
            if notify:
                self.notify(model.message_class.queue_name(), cursor)
        return ids

    def _next_ids(self, cursor: Any, table: str, count: int) -> tuple[int, ...]:
        """``count`` new ids from the table's id sequence, growing."""
        cursor.execute(self.sql.NEXT_IDS.text, [table, count])
        return tuple(sorted(r[0] for r in cursor.fetchall()))

    def insert_one(
        self, model: type[QueueItem], row: EnqueueRow, *, notify: bool, extra: Mapping[str, Any] | None = None
    ) -> int:
        sql, params = self._insert_one_sql(model, row, extra)
        with self.cursor() as cursor:
            return int(self._written(cursor, sql + self.sql.RETURNING_IDS.text, params, model, notify)[0][0])

    def claim(self, claim: Claim, run: JobRun | None = None) -> list[QueueItem]:
        try:
            return self._claim_recording(claim, run)
        except UNREADABLE:
            # The claim committed before its rows were read: rather than leave them Leased, the unreadable
            # ones become Error and the others are read back. Only a failed claim pays for this.
            items = self._read_back(claim, run)
            if items is None:
                raise
            return items

    def _claim_recording(self, claim: Claim, run: JobRun | None) -> list[QueueItem]:
        if run is None:
            return self._claim(claim)
        # One statement, so one round trip and one commit: the claim, and the run's row if it leased anything.
        claiming, params = self._claiming(claim, run)
        with self.cursor() as cursor:
            cursor.execute(self.sql.CLAIM_RECORDING.format(claiming=claiming), params)
            rows = cursor.fetchall()
        return self._recorded(claim, run, rows)

    def _claiming(self, claim: Claim, run: JobRun) -> tuple[str, list[Any]]:
        """The WITH parts that claim and record ``run``, and their params."""
        claim_sql, params = self._claim_sql(claim)
        fields = [f for f in run._meta.local_concrete_fields if not f.primary_key]
        params += [
            f.get_db_prep_save(getattr(run, f.attname), self.connection) for f in fields if f.attname != "leased"
        ]
        key = (claim_sql, type(run))
        if key not in CLAIM_STATEMENTS:
            columns = ", ".join(self.quote(str(f.column)) for f in fields)
            values = ", ".join("count(*)" if f.attname == "leased" else "%s" for f in fields)
            runs = self.quote(run._meta.db_table)
            CLAIM_STATEMENTS[key] = self.sql.CLAIMING.format(claim=claim_sql, runs=runs, columns=columns, values=values)
        return CLAIM_STATEMENTS[key], params

    def _recorded(self, claim: Claim, run: JobRun, rows: Sequence[Sequence[Any]]) -> list[QueueItem]:
        """The items of claimed ``rows`` (each ending with the run's id), ``run`` saved as recorded if any."""
        if rows:
            run.pk, run.leased = rows[0][-1], len(rows)
            run._state.adding, run._state.db = False, self.alias
        return self._items(claim.model, [row[:-1] for row in rows])

    def finish_run(
        self, run: models.Model, fields: Sequence[str], counter: type[models.Model], key: dict[str, Any],
        amounts: dict[str, Any],
    ) -> None:
        model = type(run)
        if pre_save.has_listeners(model) or post_save.has_listeners(model):  # they are told of run.save()
            return super().finish_run(run, fields, counter, key, amounts)
        # One round trip instead of two: each costs the worker a wait, a run's acknowledgement several.
        saved = [model._meta.get_field(name) for name in fields]
        assignments = ", ".join(f"{self.quote(str(f.column))} = %s" for f in saved)  # type: ignore[union-attr]
        values = [f.get_db_prep_save(getattr(run, f.attname), self.connection) for f in saved]  # type: ignore[union-attr]
        add_counts, counts = self._add_counts_sql(counter, key, amounts)
        sql = self.sql.FINISH_RUN.format(runs=self.quote(model._meta.db_table), assignments=assignments,
                                         add_counts=add_counts)
        with self.cursor() as cursor:
            cursor.execute(sql, [*values, run.pk, *counts])

    def finish_processed(self, finish: Finish) -> list[int]:
        finishing, params = self._finishing(finish)
        with self.cursor() as cursor:
            cursor.execute(self.sql.FINISH_PROCESSED.format(finishing=finishing), params)
            return [row[0] for row in cursor.fetchall()]

    def finish_and_claim(self, finish: Finish, claim: Claim, run: JobRun) -> tuple[list[int], list[QueueItem]]:
        finishing, finish_params = self._finishing(finish)
        claiming, claim_params = self._claiming(claim, run)
        try:
            with self.cursor() as cursor:
                cursor.execute(
                    self.sql.FINISH_AND_CLAIM.format(finishing=finishing, claiming=claiming),
                    [*finish_params, *claim_params],
                )
                rows = cursor.fetchall()
        except UNREADABLE:
            # Both committed before the claimed rows were read, the ids done with them: the finish deleted or
            # changed every row its run still held, and the claim's rows are read back as claim() reads them.
            items = self._read_back(claim, run)
            if items is None:
                raise
            return list(finish.ids), items
        done = next(list(row[-1]) for row in rows if row[-1] is not None)  # one row carries them
        return done, self._recorded(claim, run, [row[:-1] for row in rows if row[0] is not None])

    def _finishing(self, finish: Finish) -> tuple[str, list[Any]]:
        """The WITH parts that end ``finish``'s run, and their params."""
        table = self.quote(finish.model._meta.db_table)
        run = finish.run
        where, params = self._held(table, finish.ids, run.correlation_id)
        if finish.change is None:
            done = self.sql.DELETE_HELD.format(table=table, where=where)
        else:
            assignments, values = self._set(finish.change)
            done = self.sql.UPDATE_HELD.format(table=table, assignments=assignments, where=where)
            params = [*values, *params]
        finishing = self.sql.FINISHING.format(
            done=done, runs=self.quote(type(run)._meta.db_table), minutes=self.quote(finish.counter._meta.db_table)
        )
        return finishing, [
            *params, self.adapt(run.finished_at), run.pk, run.queue, self.adapt(finish.minute), finish.seconds
        ]

    def _read_back(self, claim: Claim, run: JobRun | None) -> list[QueueItem] | None:
        """The rows a claim leased, once those Python cannot read are Error; None when none of them was.

        The run counts the Error rows as leased and failed, and is finished when no row is left.
        """
        leased = claim.model.objects.using(self.alias).leased().filter(correlation_id=claim.correlation_id)
        errors = quarantine(leased, claim.count)
        if not errors:
            return None
        items = list(leased)
        if run is not None:
            runs = type(run).objects.using(self.alias)
            run.pk = runs.values_list("pk", flat=True).get(correlation_id=claim.correlation_id)
            run._state.adding, run._state.db = False, self.alias
            run.leased, run.errors, run.finished_at = len(items) + errors, errors, None if items else timezone.now()
            run.save(using=self.alias, update_fields=["errors", "finished_at"])
        return items

    def after_staging_created(self, table: str) -> None:
        with self.cursor() as cursor:
            cursor.execute(self.sql.SET_UNLOGGED.format(table=self.quote(table)))

    def stage_rows(self, table: str, rows: Sequence[StagedRow]) -> None:
        def write(copy: Any) -> None:
            for chunk in copy_text.staged_chunks(rows):
                copy.write(chunk)

        with self.cursor() as cursor:
            columns = "(" + ", ".join(STAGED_COLUMNS) + ")"
            copy_rows(cursor, self.sql.COPY.format(table=self.quote(table), columns=columns), write)

    def merge_staged(
        self,
        model: type[QueueItem],
        table: str,
        tokens: Sequence[int],
        default_status: str,
        now: datetime,
        *,
        idempotent: bool,
        batch: int | None = None,
    ) -> MergeCounts:
        queue, headers = self.quote(model._meta.db_table), self.staged_headers("headers", batch)
        inserted = self._insert_staged_if_empty(queue, table, tokens, default_status, now, headers)
        if inserted is not None:
            return inserted
        merge = self.sql.MERGE_STAGED.format(
            staging=self.quote(table),
            queue=queue,
            columns=self._columns(),
            headers=headers,
            written=(self.sql.STAGED_WRITTEN if idempotent else self.sql.EVERY).text,
            upsert=self._staged_upsert(queue, idempotent=idempotent),
            unchanged=(self.sql.UNCHANGED_NOT_WRITTEN if idempotent else self.sql.UNCHANGED_IN_SNAPSHOT).text,
        )
        at = self.adapt(now)
        with self.cursor() as cursor:
            cursor.execute(merge, [list(tokens), default_status, at, at, at, list(tokens)])
            total, new, unchanged, scheduled, staged_count = cursor.fetchone()
        return MergeCounts(new, total - new - unchanged, unchanged, scheduled, staged_count - total)

    def _insert_staged_if_empty(
        self, queue: str, table: str, tokens: Sequence[int], default_status: str, now: datetime, headers: str
    ) -> MergeCounts | None:
        """The counts of the ``INSERT_STAGED`` statement when ``queue`` is empty and it stores every staged message;
        None, and nothing written, when the queue holds a row or an id repeats."""
        insert = self.sql.INSERT_STAGED.format(
            queue=queue, columns=self._columns(), headers=headers, staging=self.quote(table)
        )
        at = self.adapt(now)
        with self.cursor() as cursor:
            cursor.execute(self.sql.ANY_ROW.format(table=queue))
            if cursor.fetchone()[0]:
                return None
            try:
                with transaction.atomic(using=self.alias):  # a savepoint: a refused id undoes only this insert
                    cursor.execute(insert, [default_status, at, at, list(tokens)])
                    new, scheduled = cursor.fetchone()
            except IntegrityError:
                return None
        return MergeCounts(new, 0, 0, scheduled, 0)

    @contextmanager
    def merge_turn(self, table: str, on_wait: Callable[[], None]) -> Iterator[None]:
        # A transaction-level advisory lock: released by the commit or rollback, whatever happens.
        key = [MERGE_LOCK_SPACE, lock_key(table)]
        with transaction.atomic(using=self.alias):
            with self.cursor() as cursor:
                cursor.execute(self.sql.TRY_TURN.text, key)
                if not cursor.fetchone()[0]:
                    on_wait()
                    cursor.execute(self.sql.WAIT_TURN.text, key)
            yield

    @contextmanager
    def hold(self, name: str) -> Iterator[None]:
        key = [HELD_LOCK_SPACE, lock_key(name)]
        with self.cursor() as cursor:
            cursor.execute(self.sql.HOLD.text, key)
        try:
            yield
        finally:
            with suppress(DatabaseError), self.cursor() as cursor:  # a lost connection released it
                cursor.execute(self.sql.RELEASE.text, key)

    def held(self, names: Collection[str]) -> set[str]:
        by_key = {lock_key(name) & 0xFFFFFFFF: name for name in names}  # pg_locks shows the key as an oid
        with self.cursor() as cursor:
            cursor.execute(self.sql.HELD_LOCKS.text, [HELD_LOCK_SPACE, list(by_key)])
            return {by_key[row[0]] for row in cursor.fetchall()}

    def is_deadlock(self, error: DatabaseError) -> bool:
        return getattr(error.__cause__, "sqlstate", None) == "40P01"  # deadlock_detected

    def lost(self, error: DatabaseError | InterfaceError) -> bool:
        # psycopg's OperationalError without an SQLSTATE is the connection's (refused, closed unexpectedly).
        state = getattr(error.__cause__, "sqlstate", None)
        connection = state is None or state.startswith(CONNECTION_EXCEPTION) or state in SHUTTING_DOWN
        return super().lost(error) or (isinstance(error, OperationalError) and connection)

    def refuses_settings(self, error: Exception) -> bool:
        return REFUSED_SETTINGS.search(str(error)) is not None

    def update_matching(self, rows: QuerySet[Any], values: dict[str, Any]) -> int:
        # The sorted subquery takes the row locks in id order; the UPDATE then changes rows it holds.
        try:
            sql, params = rows.order_by("pk").values("pk").query.get_compiler(using=self.alias).as_sql()
        except EmptyResultSet:  # a filter Django knows matches nothing (pk__in=[])
            return 0
        locked = RawSQL(self.sql.LOCK_SELECTED.format(select=sql), params)
        return rows.model._default_manager.using(self.alias).filter(pk__in=locked).update(**values)

    def _leased_where(self, ids: Sequence[int], correlation_id: str) -> tuple[str, list[Any]]:
        return self.sql.LEASED.text, [list(ids), correlation_id]

    def message_search_index_sql(self, table: str, name: str) -> list[str]:
        index = self.sql.SEARCH_INDEX.format(name=self.quote(name), table=self.quote(table))
        return [self.sql.TRIGRAMS.text, index]

    def drop_message_search_index_sql(self, table: str, name: str) -> list[str]:
        return [self.sql.DROP_SEARCH_INDEX.format(name=self.quote(name))]

    def _written(self, cursor: Any, sql: str, params: list[Any], model: type[QueueItem], notify: bool) -> list[Any]:
        if notify:
            sql = self.sql.NOTIFY_WRITTEN.format(write=sql)
            params = [*params, settings.NOTIFY_CHANNEL, model.message_class.queue_name()]
        cursor.execute(sql, params)
        return cursor.fetchall()

    def notify(self, queue: str, cursor: Any = None) -> None:
        if cursor is None:
            with self.cursor() as own:
                return self.notify(queue, own)
        cursor.execute(self.sql.NOTIFY.text, [settings.NOTIFY_CHANNEL, queue])

    def listen(self) -> Listener:
        return NotifyListener.connect(self.connection.get_connection_params(), settings.NOTIFY_CHANNEL)

    def by_code_point(self, column: str) -> str:
        return f'{column} COLLATE "C"'

    def transaction_pooled(self) -> bool:
        return bool(self.connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS"))

    def reached(self) -> str | None:
        with self.connection.cursor() as cursor:
            cursor.execute(self.sql.REACHED.text)
            database, system, started = cursor.fetchone()
        return f"database {database!r} of the server of system identifier {system} started at {started.isoformat()}"

    def proxy(self) -> str | None:
        with self.connection.cursor() as cursor:
            cursor.execute(self.sql.SERVER_PORT.text)
            server = int(cursor.fetchone()[0])
        reached = int(self.connection.connection.info.port)
        return None if reached == server else f"port {reached} reached a server listening on {server}"
