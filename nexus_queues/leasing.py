"""Leasing: claiming Pending messages so that no two workers ever hold the same one."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from functools import partial

from django.utils import timezone

from . import limited_claims, signals
from .backends import Claim, backend_for
from .exceptions import InvalidArgument
from .messages import QueueMessage
from .models import JobRun, QueueItem
from .registry import registry
from .retries import retried
from .status import Status
from .updates import Finishing, acknowledged, read_back, write_finishing

DEFAULT_LEASE_TIME = timedelta(minutes=30)


def lease(
    queue: type[QueueMessage] | str,
    count: int,
    *,
    lease_time: timedelta = DEFAULT_LEASE_TIME,
    correlation_id: str | None = None,
    now: datetime | None = None,
    run: JobRun | None = None,
) -> list[QueueItem]:
    """Lease up to ``count`` Pending messages in FIFO order until now + ``lease_time``.

    Every call gets its own correlation id (a new one unless given), stored on the rows and
    used to fence their completion. Returns the leased items in FIFO order. A job ``run``, when
    given, is recorded in the same transaction if anything was leased (the worker's runs are).
    A queue with flow limits leases no more than they leave room for (perhaps none): the others wait Pending.
    """
    claim = _claim(queue, count, lease_time, correlation_id, now)
    message_class = claim.model.message_class
    backend = backend_for(message_class.queue_options.database)
    limits = message_class.queue_options.limits
    work = partial(limited_claims.claim, backend, claim, run, limits) if limits else partial(backend.claim, claim, run)
    # MariaDB may still pick a claim as a deadlock's victim beside an operator's bulk change (index locks):
    # the claim was rolled back whole, so it is made again.
    items = retried(backend.alias, work)
    signals.send_items(signals.leased, items)
    return items


def finish_and_lease(
    ready: Finishing,
    queue: type[QueueMessage] | str,
    count: int,
    *,
    lease_time: timedelta = DEFAULT_LEASE_TIME,
    correlation_id: str | None = None,
    now: datetime | None = None,
    run: JobRun,
) -> list[QueueItem]:
    """A run's acknowledgement (``ready``, from :func:`~nexus_queues.updates.finishing`) written, then :func:`lease`
    for the next ``run``: in one statement and one commit where the engine can (not under flow limits, whose claim
    takes a transaction of its own), else one after the other."""
    options = registry.resolve(queue).queue_options
    backend = backend_for(options.database)
    if options.limits or not backend.features.claims_while_acknowledging:
        write_finishing(ready)
        return lease(queue, count, lease_time=lease_time, correlation_id=correlation_id, now=now, run=run)
    claim = _claim(queue, count, lease_time, correlation_id, now)
    done, items = retried(backend.alias, partial(backend.finish_and_claim, ready.finish, claim, run))
    ready.written(done)
    signals.send_items(signals.leased, items)
    return items


def lease_again(
    queue: type[QueueMessage] | str,
    count: int,
    *,
    lease_time: timedelta = DEFAULT_LEASE_TIME,
    correlation_id: str,
    now: datetime | None = None,
    run: JobRun | None = None,
) -> list[QueueItem]:
    """:func:`lease` after a lost connection: the rows the lost claim leased under ``correlation_id``, if it committed
    (``run`` read back as recorded with them), else a new claim."""
    message_class = registry.resolve(queue)
    rows = message_class.queue_items().leased().filter(correlation_id=correlation_id)
    items = list(rows.order_by(*message_class.queue_model.lease_ordering))
    if not items:
        return lease(queue, count, lease_time=lease_time, correlation_id=correlation_id, now=now, run=run)
    if run is not None:
        recorded = type(run).objects.using(message_class.queue_options.database)
        run.pk = recorded.values_list("pk", flat=True).get(correlation_id=correlation_id)
        run.leased, run._state.adding, run._state.db = len(items), False, message_class.queue_options.database
    signals.send_items(signals.leased, items)
    return items


def finish_and_lease_again(
    ready: Finishing,
    queue: type[QueueMessage] | str,
    count: int,
    *,
    lease_time: timedelta = DEFAULT_LEASE_TIME,
    correlation_id: str,
    now: datetime | None = None,
    run: JobRun,
) -> list[QueueItem]:
    """:func:`finish_and_lease` after a lost connection: the acknowledgement written unless it committed (then
    reported from its rows), and :func:`lease_again`; or both again, in one statement, when neither committed."""
    if not ready.reported:  # else it was written on its own, before the claim that was lost
        if not acknowledged(ready.finish.run, registry.resolve(queue).queue_options.database):
            return finish_and_lease(
                ready, queue, count, lease_time=lease_time, correlation_id=correlation_id, now=now, run=run
            )
        read_back(ready)
    return lease_again(queue, count, lease_time=lease_time, correlation_id=correlation_id, now=now, run=run)


def _claim(
    queue: type[QueueMessage] | str, count: int, lease_time: timedelta, correlation_id: str | None,
    now: datetime | None,
) -> Claim:
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InvalidArgument(f"count must be a positive integer, got {count!r}.")
    if not isinstance(lease_time, timedelta) or lease_time <= timedelta(0):
        raise InvalidArgument(f"lease_time must be a positive timedelta, got {lease_time!r}.")
    message_class = registry.resolve(queue)
    now = now or timezone.now()
    return Claim(message_class.queue_model, count, now, now + lease_time, correlation_id or uuid.uuid4().hex)


def abandon_expired_leases(now: datetime | None = None) -> dict[str, int]:
    """Turn every expired lease into Abandoned, in one statement per queue; counts per queue."""
    now = now or timezone.now()
    return {message_class.queue_name(): abandon_expired(message_class, now) for message_class in registry}


def abandon_expired(message_class: type[QueueMessage], now: datetime) -> int:
    """Turn the queue's expired leases into Abandoned, in one statement; how many."""
    count = message_class.queue_items().lease_expired(now).update_unfinished(status=Status.ABANDONED, updated_at=now)
    if count:
        signals.send(signals.abandoned, message_class, message_class.queue_options.database, count=count, now=now)
    return count
