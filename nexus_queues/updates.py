"""Status changes: fenced completions by the lease holder, and operators' bulk changes."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from django.core.exceptions import FieldError, ValidationError
from django.db import transaction
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from . import changes, membership, signals
from .backends import Backend, Finish, backend_for
from .changes import Change
from .deprecations import moved_names
from .exceptions import InvalidArgument, InvalidLookup, InvalidMessage
from .limits import check_datetime
from .registry import registry
from .retries import retried
from .status import Status, validate_settable_status
from .throughput import QueueMinute, minute_of

if TYPE_CHECKING:
    from .messages import QueueMessage
    from .models import JobRun, QueueItem

logger = logging.getLogger("nexus_queues")


def mark_processed(
    items: Iterable[QueueItem], *, now: datetime | None = None, fields: Sequence[str] = ()
) -> list[int]:
    """Processed (the message becomes the previous version), or deleted when the queue keeps
    no processed messages. Only rows still leased by their item's lease change; returns their ids.

    ``fields``: fields of the items (a job's results) saved on their kept rows in the same fenced write.
    """
    now = now or timezone.now()
    done: list[QueueItem] = []
    for lease in _leases(items):
        message_class = lease.model.message_class
        change = changes.processed(now, identity=message_class.has_identity)
        keeps = message_class.queue_options.keeps_processed
        done += _changed(lease, _change(lease, change, fields) if keeps else _delete(lease))
    signals.send_items(signals.processed, done)
    return [item.pk for item in done]


@dataclass
class Finishing:
    """A run's acknowledgement in one statement, made ready by :func:`finishing`: what the backend writes, and the
    items it reports on once written (:meth:`written`)."""

    finish: Finish
    items: Sequence[QueueItem]
    change: Change
    reported: bool = False
    """Has the statement been written, and :meth:`written` told of it?"""

    def written(self, done: Sequence[int]) -> None:
        """Report what the statement did: leases lost on the rows not in ``done``, the kept items changed, the run's
        counts, the ``processed`` signal."""
        self.reported = True
        finish = self.finish
        done = _report(_Lease(finish.model, finish.run.correlation_id, list(self.items)), done, "processed")
        if finish.change is not None:
            self.change.apply(self.items, done)
        run = finish.run
        run.processed, run.rescheduled, run.errors = len(done), 0, 0
        signals.send_items(signals.processed, self.items, done)


def finishing(
    items: Sequence[QueueItem], run: JobRun, *, now: datetime, fields: Sequence[str] = ()
) -> Finishing | None:
    """:func:`mark_processed` of one run's ``items`` (with their ``fields``) with ``run`` saved as finished and
    counted in its queue's minute, made ready to write in one statement where the engine can: for runs whose saves
    nothing listens to and no batch counts (and, with ``fields`` on kept rows, of one item). None when those need
    the several statements of a transaction."""
    model = type(items[0])
    options = model.message_class.queue_options
    backend = backend_for(options.database)
    keeps = options.keeps_processed
    if (
        not backend.features.acknowledges_in_one_statement
        or (keeps and fields and len(items) > 1)
        or membership.members(items)
        or any(signal.has_listeners(type(run)) for signal in (pre_save, post_save))
    ):
        return None
    run.finished_at = now
    seconds = (now - run.started_at).total_seconds()
    change = changes.processed(now, identity=model.message_class.has_identity)
    written = _with_fields(backend, change, items[0], fields) if keeps else None
    finish = Finish(model, [item.pk for item in items], run, QueueMinute, minute_of(now), seconds, written)
    return Finishing(finish, items, change)


def write_finishing(ready: Finishing) -> None:
    """Write a run's acknowledgement made ready by :func:`finishing`, on its own."""
    backend = backend_for(ready.finish.model.message_class.queue_options.database)
    ready.written(retried(backend.alias, partial(backend.finish_processed, ready.finish)))


def acknowledged(run: JobRun, alias: str) -> bool:
    """Has ``run``'s acknowledgement committed? It saves the run's row finished in its own transaction, so the row
    tells, when the connection was lost with the commit's reply."""
    return type(run).objects.using(alias).filter(pk=run.pk, finished_at__isnull=False).exists()


def write_finishing_again(ready: Finishing) -> None:
    """:func:`write_finishing` after a lost connection, unless the lost statement had committed (then
    :func:`read_back`)."""
    if acknowledged(ready.finish.run, ready.finish.model.message_class.queue_options.database):
        read_back(ready)
    else:
        write_finishing(ready)


def read_back(ready: Finishing) -> None:
    """Report a run's acknowledgement that committed though its reply was lost, from the rows it left: those gone,
    or Processed under its run's lease at its finish time."""
    finish = ready.finish
    rows = finish.model.message_class.queue_items().filter(pk__in=finish.ids)
    others = set(rows.exclude(status=Status.PROCESSED, correlation_id=finish.run.correlation_id,
                              processed_at=finish.run.finished_at).values_list("pk", flat=True))
    ready.written([pk for pk in finish.ids if pk not in others])


def mark_error(
    items: Iterable[QueueItem], exc: BaseException, *, now: datetime | None = None, fields: Sequence[str] = ()
) -> list[int]:
    """Error, keeping the exception's type, message and traceback (and the items' ``fields``, as
    :func:`mark_processed` does)."""
    change = changes.failed(exc, now or timezone.now())
    done = [item for lease in _leases(items) for item in _changed(lease, _change(lease, change, fields))]
    signals.send_items(signals.failed, done, exc=exc)
    return [item.pk for item in done]


def reschedule(
    items: Iterable[QueueItem], at: datetime, *, now: datetime | None = None, reset_attempts: bool = False,
    fields: Sequence[str] = (),
) -> list[int]:
    """Sleeping until ``at``; the dispatch loop makes them Pending then.

    ``reset_attempts`` starts the attempt count afresh (a job asked to run again later after a success);
    ``fields`` are saved as :func:`mark_processed` saves them.
    """
    _check_at("reschedule", at)
    return _fenced(items, changes.rescheduled(at, now or timezone.now(), reset_attempts=reset_attempts), fields)


def retry_later(
    items: Iterable[QueueItem], exc: BaseException, at: datetime, *, now: datetime | None = None,
    fields: Sequence[str] = (),
) -> list[int]:
    """Sleeping until ``at`` for another attempt, keeping the exception that failed this one (and the items'
    ``fields``, as :func:`mark_processed` does)."""
    _check_at("retry_later", at)
    return _fenced(items, changes.retried_later(exc, at, now or timezone.now()), fields)


def renew_leases(items: Iterable[QueueItem], until: datetime, *, now: datetime | None = None) -> list[int]:
    """Extend the leases still held by their item's lease to ``until`` (a running job's heartbeat)."""
    return _fenced(items, changes.renewed(until, now or timezone.now()))


def set_status(items: Iterable[QueueItem], status: str, *, now: datetime | None = None) -> list[int]:
    """Any status but Leased and Sleeping (a custom status hides the rows from workers)."""
    return _fenced(items, changes.status_set(validate_settable_status(status), now or timezone.now()))


def update_status(queue: type[QueueMessage] | str, status: str, /, **lookups: Any) -> int:
    """Set ``status`` on every message of the queue matching Django lookups, in one transaction.

    ``update_status(ProductUpdated, "Pending", message__sku="123")``; returns the count changed.
    A Leased row loses its lease (its worker's completion then changes nothing). The batch members it moves count in
    their batches, as every queryset ``update()`` of a status does.
    """
    message_class = registry.resolve(queue)
    status = validate_settable_status(status)
    backend = backend_for(message_class.queue_options.database)
    values = changes.status_set(status, timezone.now()).as_update()
    try:
        matching = message_class.queue_items().filter(**lookups)
        return retried(backend.alias, partial(backend.update_matching, matching, values))
    except (FieldError, ValidationError, ValueError, TypeError) as exc:
        raise InvalidLookup(f"Bad filter for queue {message_class.queue_name()!r}: {exc}") from exc


def set_default_status(queue: type[QueueMessage] | str, status: str) -> None:
    """The status new messages of the queue get, stored in the database (e.g. ``Paused``)."""
    message_class = registry.resolve(queue)
    status = validate_settable_status(status)
    with backend_for(message_class.queue_options.database).write_transaction():
        message_class.queue_settings().update_or_create(
            queue=message_class.queue_name(), defaults={"default_status": status}
        )


def default_status(queue: type[QueueMessage] | str) -> str:
    """The status new messages of the queue get now."""
    message_class = registry.resolve(queue)
    return backend_for(message_class.queue_options.database).default_status(message_class.queue_model)


def _check_at(function: str, at: datetime) -> None:
    if not isinstance(at, datetime):
        raise InvalidArgument(f"{function} needs a datetime, got {type(at).__name__}.")
    check_datetime("at", at)


class _Lease(NamedTuple):
    model: type[QueueItem]
    correlation_id: str
    items: list[QueueItem]


def _leases(items: Iterable[QueueItem]) -> list[_Lease]:
    groups: dict[tuple[type[QueueItem], str], list[QueueItem]] = defaultdict(list)
    for item in items:
        if item.correlation_id is None:
            raise InvalidMessage(f"{item} was never leased; lease it before completing it.")
        groups[type(item), item.correlation_id].append(item)
    return [_Lease(model, cid, batch) for (model, cid), batch in groups.items()]


def _fenced(items: Iterable[QueueItem], change: Change, fields: Sequence[str] = ()) -> list[int]:
    """``change`` on the rows still leased by their item's lease, and on those items; the ids changed."""
    done = []
    for lease in _leases(items):
        done += _change(lease, change, fields)
    return done


def _changed(lease: _Lease, ids: Sequence[int]) -> list[QueueItem]:
    """The lease's items whose rows changed (``ids``), in the lease's order."""
    wanted = set(ids)
    return [item for item in lease.items if item.pk in wanted]


def _change(lease: _Lease, change: Change, fields: Sequence[str] = ()) -> list[int]:
    """``change`` on the lease's rows still held; with ``fields``, each row its own write (their values differ)."""
    if fields and len(lease.items) > 1:
        return [pk for item in lease.items for pk in _change(lease._replace(items=[item]), change, fields)]
    backend = backend_for(lease.model.message_class.queue_options.database)
    ids = [item.pk for item in lease.items]
    written = _with_fields(backend, change, lease.items[0], fields) if fields else change
    write = partial(backend.update_leased, lease.model, ids, lease.correlation_id, written)
    changed = retried(backend.alias, _counted(backend.alias, lease, write, change.status))
    change.apply(lease.items, changed)
    return _report(lease, changed, change.name)


def _with_fields(backend: Backend, change: Change, item: QueueItem, fields: Sequence[str]) -> Change:
    """``change`` writing ``item``'s ``fields`` too, as their model fields save them (for the row only: the item
    holds them already)."""
    saved = [item._meta.get_field(name) for name in fields]
    values = tuple(
        (str(f.column), f.get_db_prep_save(getattr(item, f.attname), backend.connection))  # type: ignore[union-attr]
        for f in saved
    )
    return Change(change.name, (*change.values, *values))


def _delete(lease: _Lease) -> list[int]:
    backend = backend_for(lease.model.message_class.queue_options.database)
    ids = [item.pk for item in lease.items]
    write = partial(backend.delete_leased, lease.model, ids, lease.correlation_id)
    deleted = retried(backend.alias, _counted(backend.alias, lease, write, Status.PROCESSED))
    return _report(lease, deleted, "processed")


def _counted(alias: str, lease: _Lease, write: Callable[[], list[int]], after: str | None) -> Callable[[], list[int]]:
    """``write``, and when it finishes batch members, their batches' counters in the same transaction."""
    if after not in membership.FINISHED or not membership.members(lease.items):
        return write

    def counted() -> list[int]:
        with transaction.atomic(using=alias, savepoint=False):  # within the worker's acknowledgement: no savepoint
            changed = write()
            membership.finished(alias, lease.items, changed, Status.LEASED, after, timezone.now())
            return changed

    return counted


def _report(lease: _Lease, changed: Sequence[int], what: str) -> list[int]:
    lost = sorted({item.pk for item in lease.items} - set(changed))
    queue = lease.model.message_class.queue_name()
    if lost:
        logger.warning(
            "Lease lost on %s message(s) %s of queue %s; not %s, rows left as they are.",
            len(lost),
            lost,
            queue,
            what,
            extra={"action": "lease_lost", "queue": queue, "nexus.correlation_id": lease.correlation_id},
        )
    return list(changed)


__getattr__ = moved_names(__name__, {
    "set_processing_enabled": "nexus_queues.jobs.control", "dispatch_due": "nexus_queues.dispatching",
})
