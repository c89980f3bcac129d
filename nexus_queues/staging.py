"""Staging tables: rows written by many processes at once, then merged into a queue in one
transaction by enqueue's rules (new ids stored, changed ones replace the stored message, unchanged
ones discarded on idempotent queues).

Each writer tags its rows with a token of its own; the merge takes only the tokens it is given, so
rows of a writer that failed, was retried or ran twice are left out.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from django.apps.registry import Apps
from django.db import connections, models, transaction
from django.utils import timezone
from django.utils.text import slugify

from . import membership
from .backends import backend_for
from .backends.base import MergeCounts as MergeCounts
from .backends.base import StagedRow as StagedRow
from .backends.budget import UNLIMITED as UNLIMITED
from .backends.budget import Budget as Budget
from .status import MAX_STATUS_LENGTH

if TYPE_CHECKING:
    from .messages import QueueMessage
    from .models import QueueItem
    from .models.batches import Batch

PREFIX = "nexus_staging_"
STREAM_PREFIX = "nexus_stream_"
STALE_AFTER = timedelta(days=1)
"""A batch's staging table older than this was left by a driver that died: :func:`drop_stale` drops it."""
_STAMP = "%Y%m%d%H%M%S"


def new_token() -> int:
    """A writer's token: random, so that writers need not agree on one."""
    return secrets.randbits(62) + 1


def new_table_name(queue: str) -> str:
    """A staging table name no other sync uses, telling the queue and when it was made."""
    return f"{PREFIX}{timezone.now().strftime(_STAMP)}_{secrets.token_hex(4)}_{queue}"[:63]


def made_for(table: str, queue: str, since: datetime) -> bool:
    """Is ``table`` a staging table of :func:`new_table_name` for ``queue``, made at ``since`` or later?"""
    stamp, token = table[len(PREFIX) :][:14], table[len(PREFIX) + 15 :][:8]
    if not table.startswith(PREFIX) or table != f"{PREFIX}{stamp}_{token}_{queue}"[:63]:
        return False
    return stamp >= since.astimezone(UTC).strftime(_STAMP)


def stream_table_name(stream: str) -> str:
    """The staging table of stream ``stream``: the same across its restarts, emptied after each batch."""
    digest = hashlib.sha256(stream.encode()).hexdigest()[:12]
    return f"{STREAM_PREFIX}{digest}_{slugify(stream).replace('-', '_')}"[:63]


def drop_stale(alias: str, now: datetime) -> list[str]:
    """Drop the batch staging tables on ``alias`` made before ``now - STALE_AFTER``; their names."""
    stale = []
    for table in connections[alias].introspection.table_names():
        if table.startswith(PREFIX):
            made = datetime.strptime(table[len(PREFIX) :][:14], _STAMP).replace(tzinfo=UTC)
            if made < now - STALE_AFTER:
                drop(alias, table)
                stale.append(table)
    return stale


def staging_model(table: str) -> type[models.Model]:
    """An unregistered model of staging table ``table``, for Django's schema editor to create and drop."""
    meta = type("Meta", (), {"apps": Apps(), "app_label": "nexus_queues", "db_table": table})
    fields = {
        "token": models.BigIntegerField(),
        "position": models.BigIntegerField(),
        "message_id": models.CharField(max_length=255, null=True),
        "message": models.TextField(null=True),
        "message_hash": models.CharField(max_length=64, null=True),
        "headers": models.TextField(null=True),
        "status": models.CharField(max_length=MAX_STATUS_LENGTH, null=True),
        "process_at": models.DateTimeField(null=True),
        "expires_at": models.DateTimeField(null=True),
        "reject": models.TextField(null=True),
    }
    return type("StagingRow", (models.Model,), {"__module__": __name__, "Meta": meta, **fields})


def create(alias: str, table: str) -> None:
    """Create staging table ``table`` on database ``alias`` unless it exists."""
    if table in connections[alias].introspection.table_names():
        return
    with connections[alias].schema_editor() as editor:
        editor.create_model(staging_model(table))
    backend_for(alias).after_staging_created(table)


def drop(alias: str, table: str) -> None:
    """Drop staging table ``table`` if it exists."""
    if table in connections[alias].introspection.table_names():
        with connections[alias].schema_editor() as editor:
            editor.delete_model(staging_model(table))


def clear(alias: str, table: str) -> None:
    """Empty staging table ``table`` (a stream's, between its batches)."""
    staging_model(table)._default_manager.using(alias).all().delete()


def stage(alias: str, table: str, rows: Sequence[StagedRow]) -> None:
    """Write ``rows`` into staging table ``table`` in one transaction (PostgreSQL: COPY)."""
    if rows:
        with transaction.atomic(using=alias):
            backend_for(alias).stage_rows(table, rows)


def count(alias: str, table: str) -> int:
    """How many rows staging table ``table`` holds."""
    return staging_model(table)._default_manager.using(alias).count()


def drop_repeated(alias: str, table: str) -> int:
    """Delete the rows of ``table`` staged twice under one token and position (a writer run twice); how many."""
    return backend_for(alias).drop_repeated_staged(table)


def budget(alias: str) -> Budget:
    """What one staging statement may carry on ``alias``: a row larger than that is rejected, not staged."""
    return backend_for(alias).budget()


def rejects(alias: str, table: str, tokens: Sequence[int]) -> Iterable[str]:
    """The rejects staged under ``tokens``, in position order."""
    return backend_for(alias).staged_rejects(table, tokens)


def turn(message_class: type[QueueMessage], on_wait: Callable[[], None]) -> AbstractContextManager[None]:
    """The transaction for a merge into the queue of ``message_class``, once the merges before it finished.

    Merges into one queue take turns, so that each decides and counts on the rows the one before it
    stored (PostgreSQL: an advisory lock; MariaDB/MySQL: GET_LOCK; SQLite: its write lock).
    ``on_wait()`` is called before waiting for another merge.
    """
    options = message_class.queue_options
    return backend_for(options.database).merge_turn(message_class.queue_model._meta.db_table, on_wait)


def merge(
    message_class: type[QueueMessage], table: str, tokens: Sequence[int], *, notify: bool, batch: Batch | None = None
) -> MergeCounts:
    """Merge the messages staged under ``tokens`` into the queue of ``message_class``, in the caller's
    transaction; ``notify`` wakes the queue's workers once, when it commits.

    With ``batch`` (open, made in the caller's transaction), the messages the merge writes (new and changed;
    unchanged ones too on a queue that is not idempotent, which stores them again) become its members, and it
    is closed; when the merge writes none, it is deleted.
    """
    if not tokens:
        if batch is not None:
            batch.delete(using=message_class.queue_options.database)
        return MergeCounts()
    options = message_class.queue_options
    alias = options.database
    backend = backend_for(alias)
    model = message_class.queue_model
    backend.take_write_lock()
    default = backend.default_status(model)
    if batch is not None:
        staged = staging_model(table)._default_manager.using(alias).filter(token__in=tokens)
        idempotent = options.idempotent and message_class.has_identity
        replaced = partial(backend.staged_with_other_json, model, table, tokens) if idempotent else None
        moves = membership.replaced_by_merge(alias, model, message_class.queue_name(), staged, replaced)
        membership.record(alias, moves, timezone.now())
    joins, now = None if batch is None else batch.pk, timezone.now()
    if message_class.has_identity:
        counts = backend.merge_staged(model, table, tokens, default, now, idempotent=options.idempotent, batch=joins)
    else:
        counts = backend.append_staged(model, table, tokens, default, now, joins)
    if batch is not None:
        written = counts.new + counts.changed + (0 if options.idempotent else counts.unchanged)
        _settle(alias, batch, model, staged, written)
    if notify and (counts.new or counts.changed or (counts.unchanged and not options.idempotent)):
        backend.notify(message_class.queue_name())
    return counts


def _settle(alias: str, batch: Batch, model: type[QueueItem], staged: models.QuerySet[Any], written: int) -> None:
    """Count the ``written`` members of a merge's ``batch`` and close it, or delete it when the merge wrote none."""
    if not written:
        batch.delete(using=alias)
        return
    finished: dict[str, int] = {}
    if staged.filter(reject__isnull=True, status__in=membership.FINISHED).exists():  # rare: stored finished
        members = model.objects.using(alias).filter(headers__nexus_batch=batch.pk, status__in=membership.FINISHED)
        finished = dict(members.values("status").annotate(n=models.Count("pk")).values_list("status", "n"))
    membership.merged(alias, batch, written, finished, timezone.now())
