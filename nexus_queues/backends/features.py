"""What each engine can do, as Django's ``features``: each flag a class attribute whose docstring is the
question it answers. How an engine says things is in :mod:`.statements`; what it does, in its backend."""

from __future__ import annotations

from typing import ClassVar

from . import transports


class Features:
    """What an engine can do; a backend's ``features``. The defaults are SQLite's."""

    can_listen: ClassVar[bool] = transports.AVAILABLE
    """Can idle loops listen for the backend's wake-ups? (Everywhere but on platforms without UNIX sockets.)"""

    wakes_every_host: ClassVar[bool] = False
    """Do wake-ups reach idle loops on every host (PostgreSQL's LISTEN/NOTIFY), rather than on this one alone?"""

    has_skip_locked: ClassVar[bool] = False
    """Can a claim skip the rows that concurrent claims hold (``FOR UPDATE SKIP LOCKED``), rather than wait?"""

    has_partial_indexes: ClassVar[bool] = True
    """Can an index cover only the rows matching a condition?"""

    writes_json_lines: ClassVar[bool] = False
    """Can the engine write a query's rows as JSON lines itself (``COPY ... TO STDOUT``), for bulk reads?"""

    locks_rows_before_merge: ClassVar[bool] = False
    """Must a merge lock the stored rows it will change before it inserts? (An InnoDB INSERT ... SELECT that
    waits for a row lock holds the table's AUTO-INC lock meanwhile, blocking every insert into the queue.)"""

    acknowledges_in_one_statement: ClassVar[bool] = False
    """Can one statement delete a run's processed rows, end the run and count it (data-modifying ``WITH``)?"""
    claims_while_acknowledging: ClassVar[bool] = False
    """Can that statement also claim (and record) the queue's next run, so that a worker's runs cost one each?"""

    builds_indexes_without_blocking: ClassVar[bool] = False
    """Can a migration build an index while the table's writers go on (``CREATE INDEX CONCURRENTLY``, outside a
    transaction)?"""

    makes_pattern_indexes: ClassVar[bool] = False
    """Does Django's schema editor give each unique or indexed text column a second index, for ``LIKE 'prefix%'``
    (PostgreSQL's ``..._like``)?"""


class PostgresFeatures(Features):
    """PostgreSQL: LISTEN/NOTIFY wake-ups from every host, SKIP LOCKED claims."""

    can_listen = True
    wakes_every_host = True
    has_skip_locked = True
    writes_json_lines = True
    acknowledges_in_one_statement = True
    claims_while_acknowledging = True
    builds_indexes_without_blocking = True
    makes_pattern_indexes = True


class MySQLFeatures(Features):
    """MariaDB/MySQL: SKIP LOCKED claims, no partial indexes, merges that lock rows first."""

    has_skip_locked = True
    has_partial_indexes = False
    locks_rows_before_merge = True


class SQLiteFeatures(Features):
    """SQLite: every write takes the database lock, so claims need no row locks."""
