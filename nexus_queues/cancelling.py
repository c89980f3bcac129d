"""Cancelling messages: an operator's stop for Pending, Sleeping and Leased rows, and the check a running job makes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from django.db.models import QuerySet
from django.utils import timezone

from . import changes
from .backends import backend_for
from .backends.session import chunks
from .exceptions import InvalidArgument
from .retries import retried
from .status import Status

if TYPE_CHECKING:
    from .models import QueueItem

CANCELLABLE = (Status.PENDING, Status.SLEEPING, Status.LEASED)
"""The statuses a cancel changes: a message not yet done. Processed, Error, Abandoned and custom ones stay."""

_CHUNK = 1000


def cancel(rows: QuerySet[QueueItem] | Iterable[QueueItem], *, now: datetime | None = None) -> list[int]:
    """Set the Pending, Sleeping and Leased messages among ``rows`` (a queue's queryset, or items) to Cancelled.

    Returns the ids cancelled, in id order; rows in any other status are left as they are. Once this returns, a
    worker that holds one of them can no longer complete it: its job learns of it at its next
    :meth:`~nexus_queues.QueueJob.check_cancelled`, and the message never ends Processed.
    """
    now = now or timezone.now()
    cancelled: list[int] = []
    for model, ids in _candidates(rows).items():
        cancelled += _cancel(model, ids, now)
    if not isinstance(rows, QuerySet):
        changes.cancelled(now).apply(rows, cancelled)
    return sorted(cancelled)


def cancelled_among(items: Sequence[QueueItem]) -> set[int]:
    """The ids of ``items`` whose rows are Cancelled now (one query by primary key per queue)."""
    found: set[int] = set()
    for model, ids in _by_model(items).items():
        alias = model.message_class.queue_options.database
        rows = model.objects.using(alias).filter(pk__in=ids, status=Status.CANCELLED)
        found.update(rows.values_list("pk", flat=True))
    return found


def _candidates(rows: QuerySet[QueueItem] | Iterable[QueueItem]) -> dict[type[QueueItem], list[int]]:
    if isinstance(rows, QuerySet):
        ids = rows.filter(status__in=CANCELLABLE).order_by("pk").values_list("pk", flat=True)
        return {rows.model: list(ids)}
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise InvalidArgument(f"cancel() takes a queue's queryset or its items, not {type(rows).__name__}.")
    return _by_model(list(rows))


def _by_model(items: Iterable[QueueItem]) -> dict[type[QueueItem], list[int]]:
    groups: dict[type[QueueItem], list[int]] = defaultdict(list)
    for item in items:
        if getattr(type(item), "message_class", None) is None:
            raise InvalidArgument(f"cancel() takes a queue's items, not {type(item).__name__}.")
        groups[type(item)].append(item.pk)
    return groups


def _cancel(model: type[QueueItem], ids: list[int], now: datetime) -> list[int]:
    """Cancel the rows of ``ids`` still cancellable, chunk by chunk, each chunk one transaction that locks its rows
    in id order first, so that a worker's acknowledgement of one of them waits for it and then finds it Cancelled."""
    backend = backend_for(model.message_class.queue_options.database)
    done: list[int] = []
    for chunk in chunks(sorted(set(ids)), _CHUNK):
        done += retried(backend.alias, partial(_cancel_chunk, backend.alias, model, chunk, now))
    return done


def _cancel_chunk(alias: str, model: type[QueueItem], ids: Sequence[int], now: datetime) -> list[int]:
    backend = backend_for(alias)
    with backend.write_transaction():
        rows = model.objects.using(alias).filter(pk__in=ids, status__in=CANCELLABLE)
        locked = list(rows.select_for_update().order_by("pk").values_list("pk", flat=True))
        if locked:  # the batch members among them count Cancelled (QueueItemQuerySet.update)
            model.objects.using(alias).filter(pk__in=locked).update(**changes.cancelled(now).as_update())
    return locked
