"""The operations every engine runs alike (enqueue, lease, fenced changes, counters, staged merges); each engine's
backend overrides what it does better."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import models, transaction
from django.db.models import F, Q, QuerySet

from ..changes import Change
from ..conf import settings
from ..quarantine import read_around
from ..status import Status
from . import hydration
from .rows import INSERT_COLUMNS, STAGED_COLUMNS, Claim, EnqueueRow, Finish, MergeCounts, StagedRow, by_message_id
from .session import Session
from .statements import marks

if TYPE_CHECKING:
    from ..models import JobRun, QueueItem

CLAIM_STATEMENTS: dict[tuple[Any, type[Any]], str] = {}  # by (vendor, queue model) and (claim, run model)
INSERT_ONE_STATEMENTS: dict[tuple[Any, ...], str] = {}  # by (statements, model, columns, VALUES)


class Backend(Session):
    """SQL that works on every engine; subclasses override what their engine does better."""

    # --- enqueue -------------------------------------------------------------------

    def insert_one(
        self, model: type[QueueItem], row: EnqueueRow, *, notify: bool, extra: Mapping[str, Any] | None = None
    ) -> int:
        """Insert one row, with the ``extra`` columns of its model (a task's priority); a ``None`` status means the
        queue's current default status. Returns its id; :class:`MessageTooLarge` if it exceeds :meth:`budget`."""
        self.budget().check([row])
        with self.cursor() as cursor:
            cursor.execute(*self._insert_one_sql(model, row, extra))
            if notify:
                self.notify(model.message_class.queue_name(), cursor)
            return int(cursor.lastrowid)

    def insert_many(
        self,
        model: type[QueueItem],
        rows: Sequence[EnqueueRow],
        *,
        default_status: str | None = None,
        notify: bool,
        return_ids: bool = False,
    ) -> tuple[int, ...] | None:
        """Insert rows in batched multi-row statements (inside a transaction), ``default_status`` for
        those without a status; with ``return_ids``, return their ids in the order of ``rows``."""
        table = self.quote(model._meta.db_table)
        placeholders = "(" + marks(INSERT_COLUMNS) + ")"
        returning = self.sql.RETURNING_IDS.text if return_ids else ""
        adapt = self._memo_adapt()
        ids: list[int] = []
        with self.cursor() as cursor:
            for chunk in self.budget().batches(rows, settings.BATCH_SIZE):
                values = ", ".join([placeholders] * len(chunk))
                params = [value for row in chunk for value in self._adapted(row, adapt, default_status)]
                sql = self.sql.INSERT.format(table=table, columns=self._columns(), values=values, then=returning)
                cursor.execute(sql, params)
                if return_ids:
                    # Rows take growing ids in VALUES order; RETURNING may list them in any order.
                    ids += sorted(r[0] for r in cursor.fetchall())
            if notify:
                self.notify(model.message_class.queue_name(), cursor)
        return tuple(ids) if return_ids else None

    def upsert(
        self, model: type[QueueItem], rows: Sequence[EnqueueRow], *, idempotent: bool, notify: bool
    ) -> set[str]:
        """Insert or replace rows by message id; return the ids stored (idempotent duplicates are not)."""
        table = self.quote(model._meta.db_table)
        replace = self._replace_by_message_id(table, idempotent)
        stored: set[str] = set()
        with self.cursor() as cursor:
            for chunk in self.budget().batches(by_message_id(rows), 1000):
                values, params = self._values(model, chunk)
                sql = self.sql.UPSERT.format(table=table, columns=self._columns(), values=values, replace=replace)
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
            sql = self.sql.READ_DEFAULT_STATUS.format(default_status=self._default_status_sql())
            cursor.execute(sql, [options.queue, options.default_status])
            return str(cursor.fetchone()[0])

    def add_counts(self, model: type[models.Model], key: dict[str, Any], amounts: dict[str, Any]) -> None:
        """Add ``amounts`` to the counter columns of ``model``'s row with the unique ``key``, made at zero if
        missing, in one statement (so that concurrent adders never race to create it)."""
        sql, values = self._add_counts_sql(model, key, amounts)
        with self.cursor() as cursor:
            cursor.execute(sql, values)

    def finish_run(
        self, run: models.Model, fields: Sequence[str], counter: type[models.Model], key: dict[str, Any],
        amounts: dict[str, Any],
    ) -> None:
        """Save ``fields`` of a finished ``run``, and :meth:`add_counts` its ``amounts`` to ``counter``'s row."""
        run.save(using=self.alias, update_fields=fields)
        self.add_counts(counter, key, amounts)

    def finish_processed(self, finish: Finish) -> list[int]:
        """Delete the rows of ``finish.ids`` still leased by its run (or apply its ``change`` to them: kept rows),
        save the run as finished (at ``run.finished_at``) with as many processed, and count it in its counter's row
        of its queue and minute, in one statement (only where ``features.acknowledges_in_one_statement``); return
        the ids deleted or changed."""
        raise NotImplementedError

    def finish_and_claim(self, finish: Finish, claim: Claim, run: JobRun) -> tuple[list[int], list[QueueItem]]:
        """:meth:`finish_processed` and :meth:`claim` (recording ``run``) in one statement, one commit (only where
        ``features.claims_while_acknowledging``): the ids finished, and the items leased."""
        raise NotImplementedError

    def _add_counts_sql(
        self, model: type[models.Model], key: dict[str, Any], amounts: dict[str, Any]
    ) -> tuple[str, list[Any]]:
        table = self.quote(model._meta.db_table)
        columns = [*key, *amounts]
        names = ", ".join(self.quote(c) for c in columns)
        values = [self._db_value(model, c, v) for c, v in (*key.items(), *amounts.items())]
        added = ", ".join(self.sql.ADDED.format(table=table, column=self.quote(c)) for c in amounts)
        on_key = self.sql.ON_KEY.format(key=", ".join(self.quote(c) for c in key))
        sql = self.sql.ADD_COUNTS.format(table=table, columns=names, values=marks(values), on_key=on_key, added=added)
        return sql, values

    def _db_value(self, model: type[models.Model], column: str, value: Any) -> Any:
        field = model._meta.get_field(column)
        assert isinstance(field, models.Field)
        return field.get_db_prep_save(value, connection=self.connection)

    def update_matching(self, rows: QuerySet[Any], values: dict[str, Any]) -> int:
        """``rows.update(**values)``, taking row locks in id order first where the engine has them; the count."""
        return rows.update(**values)

    # --- lease and fenced changes ----------------------------------------------------

    def claim(self, claim: Claim, run: JobRun | None = None) -> list[QueueItem]:
        """Lease up to ``claim.count`` Pending rows in FIFO order; return them as leased.

        When anything is leased, ``run`` (if given) is saved in the same transaction with its
        ``leased`` count, so that every leased row links to a recorded run. A row Python cannot read
        rolls the claim back, becomes Error (:mod:`~nexus_queues.quarantine`), and the claim is made
        again; not within a caller's transaction, whose rollback would undo the Error.
        """
        recording = partial(self._claim_recording, claim, run)
        if self.connection.in_atomic_block:
            return recording()
        return read_around(recording, self._claimable(claim.model, claim.now), claim.count)

    def _claim_recording(self, claim: Claim, run: JobRun | None) -> list[QueueItem]:
        with transaction.atomic(using=self.alias, savepoint=False):
            items = self._claim(claim)
            if items and run is not None:
                run.leased = len(items)
                run.save(using=self.alias)
        return items

    def _claimable(self, model: type[QueueItem], now: datetime) -> QuerySet[QueueItem]:
        """The rows a claim picks from, in its order: Pending and not expired."""
        unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        return model.objects.using(self.alias).in_line().filter(unexpired)

    def _claim(self, claim: Claim) -> list[QueueItem]:
        sql, params = self._claim_sql(claim)
        with self.cursor() as cursor:
            cursor.execute(sql, params)
            return self._items(claim.model, cursor.fetchall())

    def _claim_sql(self, claim: Claim) -> tuple[str, list[Any]]:
        """The claim statement, returning every column of the leased rows in the model's field order."""
        model = claim.model
        key = (self.connection.vendor, model)
        if key not in CLAIM_STATEMENTS:
            columns = ", ".join(self.quote(str(f.column)) for f in model._meta.concrete_fields)
            table = self.quote(model._meta.db_table)
            lock = self.sql.SKIP_LOCKED.text if self.features.has_skip_locked else ""
            pick = self.sql.PICK.format(table=table, order=self._order(model), lock=lock)
            claimed_ids = self.sql.CLAIMED_IDS.format(pick=pick)
            CLAIM_STATEMENTS[key] = self.sql.CLAIM.format(table=table, claimed_ids=claimed_ids, columns=columns)
        now = self.adapt(claim.now)
        params = [self.adapt(claim.lease_until), claim.correlation_id, now, now, claim.count]
        return CLAIM_STATEMENTS[key], params

    def lease_picked(self, claim: Claim, ids: Sequence[int]) -> list[QueueItem]:
        """Lease those of rows ``ids`` that are still Pending, as :meth:`claim` leases the rows it picks (a claim
        under flow limits picked them); return them in the queue's lease order. Records no run."""
        rows = self._claimable(claim.model, claim.now).filter(pk__in=ids)
        if self.features.has_skip_locked:
            rows = rows.select_for_update(skip_locked=True)
        return self._lease_rows(claim, list(rows))

    def _lease_rows(self, claim: Claim, items: list[QueueItem]) -> list[QueueItem]:
        """Lease ``items`` (rows this transaction holds) under ``claim``, and update them to match."""
        changes = {
            "status": Status.LEASED,
            "lease_expires_at": claim.lease_until,
            "correlation_id": claim.correlation_id,
            "updated_at": claim.now,
        }
        rows = claim.model.objects.using(self.alias).filter(pk__in=[i.pk for i in items])
        rows.update_unfinished(attempts=F("attempts") + 1, **changes)  # they are Pending: no batch counts them
        for item in items:
            item.__dict__.update(changes, attempts=item.attempts + 1)
        return items

    def _order(self, model: type[QueueItem]) -> str:
        """The model's lease ordering as SQL (``-priority`` -> ``priority DESC``)."""
        names = model.lease_ordering
        return ", ".join(f"{self.quote(n[1:])} DESC" if n.startswith("-") else self.quote(n) for n in names)

    def _items(self, model: type[QueueItem], rows: Sequence[Sequence[Any]]) -> list[QueueItem]:
        return hydration.items(self.connection, model, rows)

    def update_leased(
        self, model: type[QueueItem], ids: Sequence[int], correlation_id: str, change: Change
    ) -> list[int]:
        """Apply ``change`` to the rows still leased by ``correlation_id``; return their ids."""
        table = self.quote(model._meta.db_table)
        assignments, params = self._set(change)
        where, where_params = self._held(table, ids, correlation_id)
        with self.cursor() as cursor:
            sql = self.sql.UPDATE_HELD.format(table=table, assignments=assignments, where=where)
            cursor.execute(sql, [*params, *where_params])
            return [r[0] for r in cursor.fetchall()]

    def delete_leased(self, model: type[QueueItem], ids: Sequence[int], correlation_id: str) -> list[int]:
        """Delete the rows still leased by ``correlation_id``; return their ids."""
        table = self.quote(model._meta.db_table)
        where, params = self._held(table, ids, correlation_id)
        with self.cursor() as cursor:
            cursor.execute(self.sql.DELETE_HELD.format(table=table, where=where), params)
            return [r[0] for r in cursor.fetchall()]

    # --- staging tables (bulk syncs) -------------------------------------------------

    def after_staging_created(self, table: str) -> None:
        """Tune a new staging table: nothing by default."""

    def stage_rows(self, table: str, rows: Sequence[StagedRow]) -> None:
        """Write ``rows`` into staging table ``table`` in batched multi-row statements (in a transaction)."""
        adapt = self._memo_adapt()
        placeholders = "(" + marks(STAGED_COLUMNS) + ")"
        columns = "(" + ", ".join(STAGED_COLUMNS) + ")"
        with self.cursor() as cursor:
            for chunk in self.budget().batches(rows, settings.BATCH_SIZE):
                params = [adapt(value) for row in chunk for value in row]
                values = ", ".join([placeholders] * len(chunk))
                sql = self.sql.INSERT.format(table=self.quote(table), columns=columns, values=values, then="")
                cursor.execute(sql, params)

    def staged_rejects(self, table: str, tokens: Sequence[int]) -> Iterator[str]:
        """The rejects staged under ``tokens``, in position order."""
        with self.cursor() as cursor:
            sql = self.sql.STAGED_REJECTS.format(staging=self.quote(table), tokens=marks(tokens))
            cursor.execute(sql, list(tokens))
            while rows := cursor.fetchmany(1000):
                yield from (row[0] for row in rows)

    def drop_repeated_staged(self, table: str) -> int:
        """Delete the rows of staging table ``table`` whose (token, position) an earlier row holds; how many."""
        with self.cursor() as cursor:
            cursor.execute(self.sql.DROP_REPEATED_STAGED.format(staging=self.quote(table)))
            return int(cursor.rowcount)

    def staged_with_other_json(self, model: type[QueueItem], table: str, tokens: Sequence[int]) -> list[int]:
        """The ids, ascending, of ``model``'s stored rows for which a message staged under ``tokens`` has other JSON."""
        sql = self.sql.STAGED_OTHER_JSON.format(
            staging=self.quote(table), queue=self.quote(model._meta.db_table), tokens=marks(tokens)
        )
        with self.cursor() as cursor:
            cursor.execute(sql, list(tokens))
            return sorted(row[0] for row in cursor.fetchall())

    def staged_headers(self, column: str, batch: int | None) -> str:
        """The expression of staged ``column``'s headers as the merge stores them: naming ``batch`` (an id) if any."""
        headers = self.sql.JSON_FROM_TEXT.format(column)
        return headers if batch is None else self.sql.HEADERS_IN_BATCH.format(headers=headers, batch=int(batch))

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
        """Upsert the messages staged under ``tokens`` by message id, the last staged of an id winning,
        as :meth:`upsert` does; ``default_status`` for those without a status; those it writes join ``batch``.
        Counts what it did."""
        queue, staged = self.quote(model._meta.db_table), self.quote(table)
        newest = self.sql.NEWEST_STAGED.format(staging=staged, tokens=marks(tokens))
        written = (self.sql.STAGED_WRITTEN if idempotent else self.sql.EVERY).text
        counts = self.sql.STAGED_COUNTS.format(newest=newest, queue=queue, written=written)
        if self.features.locks_rows_before_merge:
            counts += self.sql.FOR_UPDATE.text
        with self.cursor() as cursor:
            cursor.execute(counts, list(tokens))
            total, new, unchanged, scheduled, staged_count = (int(n or 0) for n in cursor.fetchone())
            insert = self.sql.MERGE_STAGED.format(
                queue=queue,
                columns=self._columns(),
                message=self.sql.JSON_FROM_TEXT.format("s.message"),
                headers=self.staged_headers("s.headers", batch),
                newest=newest,
                written=written,
                upsert=self._staged_upsert(queue, idempotent=idempotent),
            )
            cursor.execute(insert, [default_status, self.adapt(now), self.adapt(now), *tokens])
        changed, superseded = total - new - unchanged, staged_count - total
        return MergeCounts(new, changed, unchanged, scheduled, superseded)

    def append_staged(
        self, model: type[QueueItem], table: str, tokens: Sequence[int], default_status: str, now: datetime,
        batch: int | None = None,
    ) -> MergeCounts:
        """Insert the messages staged under ``tokens`` (a queue without identity) in position order, members of
        ``batch``."""
        queue, staged = self.quote(model._meta.db_table), self.quote(table)
        with self.cursor() as cursor:
            cursor.execute(self.sql.COUNT_STAGED.format(staging=staged, tokens=marks(tokens)), list(tokens))
            new, scheduled = cursor.fetchone()
            cursor.execute(
                self.sql.APPEND_STAGED.format(
                    queue=queue,
                    columns=self._columns(),
                    message=self.sql.JSON_FROM_TEXT.format("message"),
                    headers=self.staged_headers("headers", batch),
                    staging=staged,
                    tokens=marks(tokens),
                ),
                [default_status, self.adapt(now), self.adapt(now), *tokens],
            )
        return MergeCounts(new=int(new), scheduled=int(scheduled))

    def _staged_upsert(self, queue: str, *, idempotent: bool) -> str:
        """The clause that makes an insert of staged rows replace the stored rows of their message ids; on an
        idempotent queue only those whose stored hash differs, as :meth:`upsert` does."""
        return self._replace_by_message_id(queue, idempotent)

    def _replace_by_message_id(self, queue: str, idempotent: bool) -> str:
        """The clause that makes an insert replace the stored rows of its message ids (only those whose
        stored hash differs on an idempotent queue)."""
        guard = self.sql.UNCHANGED_GUARD.format(queue=queue) if idempotent else ""
        return self.sql.REPLACE_BY_MESSAGE_ID.format(guard=guard)

    # --- merges into one queue take turns --------------------------------------------

    def merge_turn(self, table: str, on_wait: Callable[[], None]) -> AbstractContextManager[None]:
        """A transaction in which the merges into queue table ``table`` take turns; ``on_wait()`` is called
        before waiting for another one to finish. Here the write lock, taken first, is the turn (SQLite)."""
        return self.write_transaction()

    # --- migration DDL ---------------------------------------------------------------

    def message_search_index_sql(self, table: str, name: str) -> list[str]:
        """Statements creating an index for the admin's text search in messages; [] where the engine has none."""
        return []

    def drop_message_search_index_sql(self, table: str, name: str) -> list[str]:
        """Statements dropping that index."""
        return []

    # --- helpers ---------------------------------------------------------------------

    def _insert_one_sql(
        self, model: type[QueueItem], row: EnqueueRow, extra: Mapping[str, Any] | None
    ) -> tuple[str, list[Any]]:
        values, params = self._values(model, [row])
        columns = self._columns()
        if extra:
            columns = columns[:-1] + "".join(f", {self.quote(name)}" for name in extra) + ")"
            values = values[:-1] + ", %s" * len(extra) + ")"
            params += list(extra.values())
        key = (self.sql, model, columns, values)
        if key not in INSERT_ONE_STATEMENTS:
            table = self.quote(model._meta.db_table)
            INSERT_ONE_STATEMENTS[key] = self.sql.INSERT.format(table=table, columns=columns, values=values, then="")
        return INSERT_ONE_STATEMENTS[key], params

    def _leased_where(self, ids: Sequence[int], correlation_id: str) -> tuple[str, list[Any]]:
        return self.sql.LEASED.format(ids=marks(ids)), [*ids, correlation_id]

    def _held(self, table: str, ids: Sequence[int], correlation_id: str) -> tuple[str, list[Any]]:
        where, params = self._leased_where(ids, correlation_id)
        return self.sql.HELD_IDS.format(table=table, held=where), params
