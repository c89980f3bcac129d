"""Locks held from another connection, and what waits on them: the overlap races made to happen on purpose."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
from django.db import connection, connections, transaction

from tests.commands import PATIENCE


class Background:
    """A callable run in a thread of its own, with its own database connection."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self.thread.start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            self.result = work()
        except BaseException as exc:  # handed to the test by outcome()
            self.error = exc
        finally:
            connections.close_all()

    def outcome(self) -> Any:
        self.thread.join(PATIENCE)
        assert not self.thread.is_alive(), "the background work did not finish"
        if self.error is not None:
            raise self.error
        return self.result


@contextmanager
def held(take: Callable[[], AbstractContextManager[Any]]) -> Iterator[Callable[[Callable[[], None]], None]]:
    """Hold what ``take()`` enters from another connection; the context gives ``then(change)``, which runs
    ``change`` inside it, before the holder lets go, when the block ends."""
    taken, release = threading.Event(), threading.Event()
    changes: list[Callable[[], None]] = []

    def hold() -> None:
        with take():
            taken.set()
            release.wait()
            for change in changes:
                change()

    holder = Background(hold)
    assert taken.wait(PATIENCE)
    try:
        yield changes.append
    finally:
        release.set()
        holder.outcome()


def row_held(message_class: Any, message_id: str) -> AbstractContextManager[Callable[[Callable[[], None]], None]]:
    """Hold the row of ``message_id`` locked from another connection, in a transaction ``then`` changes run in."""

    @contextmanager
    def locked() -> Iterator[None]:
        with transaction.atomic():
            message_class.queue_items().select_for_update().get(message_id=message_id)
            yield

    return held(locked)


def turn_held(message_class: Any) -> AbstractContextManager[Callable[[Callable[[], None]], None]]:
    """Hold the merge turn of ``message_class``'s queue from another connection, as a merge would."""
    from nexus_queues import staging

    return held(lambda: staging.turn(message_class, on_wait=lambda: None))


def lock_waits(longer_than: int = -1) -> int:
    """How many statements on the test database wait for a lock now (and have run over ``longer_than`` s)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
                "AND now() - query_start > %s * interval '1 second'",
                [longer_than],
            )
            return int(cursor.fetchone()[0])
        wait = longer_than
        # information_schema.innodb_trx leaves out a transaction that has only read when it waits: the monitor's
        # list of transactions has them all. The server is shared: only the connections to this test database.
        cursor.execute("SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND time > %s", [wait])
        ours = {row[0] for row in cursor.fetchall()}
        cursor.execute("SHOW ENGINE INNODB STATUS")
        waiting = re.findall(r"^LOCK WAIT .*\n(?:MariaDB|MySQL) thread id (\d+)", cursor.fetchone()[2], re.MULTILINE)
        cursor.execute("SELECT id FROM information_schema.processlist WHERE state = 'User lock'")  # GET_LOCK
        return len(ours & {int(thread) for thread in waiting} | ours & {row[0] for row in cursor.fetchall()})


def waiting(work: Background | None, longer_than: int = -1) -> Callable[[], bool]:
    """Whether ``work`` waits on a lock now (its statement ran over ``longer_than`` s); what it raised if it stopped."""

    def check() -> bool:
        if work is not None and not work.thread.is_alive():
            work.outcome()
            pytest.fail("The work finished without waiting on a lock.")
        return lock_waits(longer_than) == 1

    return check
