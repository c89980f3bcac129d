"""A sync's driver holds a lock while the sync runs, so that a sync whose driver died shows failed, not running.

The lock belongs to the driver's database connection (PostgreSQL: a session advisory lock; MariaDB/MySQL:
GET_LOCK; SQLite: a file lock beside the database), so the database or the operating system releases it
the moment the driver's process dies, however it dies: no heartbeat, no clock, no delay. Behind a transaction
pooler (PgBouncer) the lock is held on the alias's direct connection of ``WAKEUP_DATABASES``, once both servers said
it reaches the same database (a lock held on another server would leave the sync shown failed while it runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from django.db import transaction
from django.utils import timezone

from ...backends import backend_for
from ...pooling import checked_session_alias
from .models import Sync

STOPPED = "The sync's driver stopped before the sync finished: nothing was stored."


def lock_name(sync_id: int) -> str:
    """The name of the lock that the driver of sync ``sync_id`` holds while it runs."""
    return f"spark_sync.{sync_id}"


@contextmanager
def watched(alias: str, queue: str, **fields: Any) -> Iterator[Sync]:
    """A new running sync into ``queue`` (its record with ``fields``), its lock held by this process until the block
    ends."""
    with ExitStack() as stack:
        with transaction.atomic(using=alias):  # held before the record is seen: never running without it
            record = Sync.objects.using(alias).create(queue=queue, watched=True, **fields)
            stack.enter_context(backend_for(checked_session_alias(alias)).hold(lock_name(record.pk)))
        yield record


def settle(alias: str) -> int:
    """Mark failed the running syncs on ``alias`` whose driver stopped; how many."""
    running = {lock_name(pk): pk for pk in Sync.objects.using(alias).filter(state=Sync.State.RUNNING, watched=True)
               .values_list("pk", flat=True)}  # fmt: skip
    if not running:
        return 0
    alive = backend_for(alias).held(running)
    stopped = [pk for name, pk in running.items() if name not in alive]
    return (
        Sync.objects.using(alias)
        .filter(pk__in=stopped, state=Sync.State.RUNNING)
        .update(state=Sync.State.FAILED, error=STOPPED, finished_at=timezone.now())
    )
