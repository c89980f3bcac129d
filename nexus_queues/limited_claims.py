"""Claims under a queue's flow limits: they take turns on the queue's :class:`~.models.LimitTurn` row, count what is
in use (live leases, starts within the rate's period) by the database's clock, and lease no more than the room left,
in one transaction. A message whose key field is null or missing belongs to one keyless group, limited as a key is.

A queue without limits never comes here: its claim is the plain one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Count, Min, Q, QuerySet, Sum

from .backends import Backend, Claim, backend_for
from .backends.keys import KeyText
from .flow_limits import FlowLimits
from .models import LimitedStart, LimitTurn
from .quarantine import read_around
from .registry import registry
from .status import Status

if TYPE_CHECKING:
    from .messages import QueueMessage
    from .models import JobRun, QueueItem

SCAN_AHEAD = 100
"""How many rows past the batch a claim with a key reads, to fill the batch with other keys' rows when the first
in line share a key (rows of keys already full, the keyless group among them, are skipped in SQL, not read)."""
_OPENS_AT: dict[tuple[str, str], datetime] = {}
"""By (database alias, queue): when, by this host's clock, the rate that held this process's last claim back lets a
message start again."""


@dataclass
class _KeyRoom:
    """Room per value of one key field: ``limit`` less what each value ``used``."""

    field: str
    limit: int
    used: dict[Any, int]

    def full(self) -> list[Any]:
        """The key values at their limit (None: the keyless group)."""
        return [key for key, count in self.used.items() if count >= self.limit]

    def take(self, key: Any) -> None:
        """Count one more for ``key``."""
        self.used[key] = self.used.get(key, 0) + 1

    def has_room(self, key: Any) -> bool:
        return self.used.get(key, 0) < self.limit


@dataclass
class _Room:
    """How many messages a claim may lease: at most ``count`` in all, and within each key's room."""

    count: int
    keys: list[_KeyRoom] = field(default_factory=list)
    opens_at: datetime | None = None
    """When the rate lets more start, by the database's clock, if the rate held this claim back."""


def claim(backend: Backend, claim: Claim, run: JobRun | None, limits: FlowLimits) -> list[QueueItem]:
    """Lease up to ``claim.count`` Pending rows as :meth:`Backend.claim` does, within ``limits`` (which every claim
    of the queue, in every process, keeps to); record ``run`` in the same transaction if anything was leased."""
    work = partial(_claim, backend, claim, run, limits)
    if backend.connection.in_atomic_block:
        return work()
    return read_around(work, _claimable(backend, claim), claim.count)


def opens_at(message_class: type[QueueMessage]) -> datetime | None:
    """When the rate that held this process's last claim of the queue back lets a message start again (None: it
    did not hold it back)."""
    return _OPENS_AT.get((message_class.queue_options.database, message_class.queue_name()))


def until_rates_open(message_classes: Iterable[type[QueueMessage]], now: datetime) -> list[float]:
    """Seconds until each rate that held this process's last claim of one of ``message_classes`` back lets a
    message start again (a waiting worker wakes then)."""
    opening = (opens_at(message_class) for message_class in message_classes if message_class.queue_options.limits)
    return [(at - now).total_seconds() for at in opening if at is not None and at > now]


def wake_on_release(message_class: type[QueueMessage]) -> None:
    """In a transaction that ends leases: at its commit, wake the workers that the queue's concurrency limit may
    hold back (a place is free)."""
    if message_class.queue_options.limits.concurrency is not None:
        backend_for(message_class.queue_options.database).notify(message_class.queue_name())


def key_of(name: str) -> KeyText:
    """A message field's value as text, the same way on every engine (the key a limit counts by); NULL, the keyless
    group's key, when the field holds a JSON null or is missing."""
    return KeyText(name)


def live_leases(message_class: type[QueueMessage], now: datetime) -> QuerySet[Any]:
    """The queue's Leased rows whose lease has not run out: what a concurrency limit counts."""
    return message_class.queue_items().filter(status=Status.LEASED, lease_expires_at__gt=now)


def starts_within(message_class: type[QueueMessage], now: datetime) -> QuerySet[LimitedStart]:
    """The starts a rate limit counts at ``now``: those within its period (nothing without one)."""
    rate = message_class.queue_options.limits.rate
    starts = LimitedStart.objects.using(message_class.queue_options.database).filter(queue=message_class.queue_name())
    return starts.filter(started_at__gt=now - rate.period) if rate else starts.none()


def forget_old_starts(alias: str) -> int:
    """Delete the starts that no rate on ``alias`` counts any longer (older than its period by the database's
    clock, which the claims read too); how many."""
    periods = {
        c.queue_name(): rate.period
        for c in registry
        if c.queue_options.database == alias and (rate := c.queue_options.limits.rate) is not None
    }
    if not periods:
        return 0
    now = backend_for(alias).database_now()
    starts = LimitedStart.objects.using(alias)
    return sum(starts.filter(queue=queue, started_at__lt=now - period).delete()[0] for queue, period in periods.items())


def _claim(backend: Backend, claim: Claim, run: JobRun | None, limits: FlowLimits) -> list[QueueItem]:
    message_class = claim.model.message_class
    key = (backend.alias, message_class.queue_name())
    with transaction.atomic(using=backend.alias):
        backend.take_write_lock()
        _take_turn(backend.alias, message_class.queue_name())
        judged = _at(claim, backend.database_now())
        room = _room(message_class, limits, judged)
        items, keys = _lease(backend, judged, run, room) if room.count > 0 else ([], {})
        if items and limits.rate is not None:
            _record_starts(message_class, items, keys, judged.now)
        if room.opens_at is not None and not _claimable(backend, judged).exists():
            room.opens_at = None  # the rate holds nothing back: nothing else is Pending
    if room.opens_at is None:
        _OPENS_AT.pop(key, None)
    else:
        _OPENS_AT[key] = claim.now + (room.opens_at - judged.now)  # by this host's clock, which its worker waits by
    return items


def _at(claim: Claim, now: datetime) -> Claim:
    """``claim`` made at ``now``, the database's clock read once the turn is ours: the windows count by it and the
    leases start at it, so that no host's clock stretches a limit."""
    return replace(claim, now=now, lease_until=now + (claim.lease_until - claim.now))


def _take_turn(alias: str, queue: str) -> None:
    """Lock the queue's turn row (made on its first claim) until the transaction ends."""
    turns = LimitTurn.objects.using(alias).select_for_update().filter(queue=queue)
    if not turns.values_list("pk", flat=True):
        LimitTurn.objects.using(alias).bulk_create([LimitTurn(queue=queue)], ignore_conflicts=True)
        list(turns.values_list("pk", flat=True))


def _room(message_class: type[QueueMessage], limits: FlowLimits, claim: Claim) -> _Room:
    room = _Room(claim.count)
    if limits.concurrency is not None:
        leases = live_leases(message_class, claim.now)
        if limits.concurrency_key is None:
            room.count = min(room.count, limits.concurrency - leases.count())
        else:
            used = leases.annotate(k=key_of(limits.concurrency_key)).values("k").annotate(n=Count("pk"))
            room.keys.append(_KeyRoom(limits.concurrency_key, limits.concurrency, _counts(used)))
    if limits.rate is not None:
        starts = starts_within(message_class, claim.now)
        if limits.rate_key is None:
            found = starts.aggregate(n=Sum("count"), first=Min("started_at"))
            used, first = found["n"] or 0, found["first"]
            held = limits.rate.starts - used < room.count
            room.count = min(room.count, limits.rate.starts - used)
        else:
            rows = list(starts.values("key").annotate(n=Sum("count"), first=Min("started_at")))
            first = min((row["first"] for row in rows), default=None)
            room.keys.append(_KeyRoom(limits.rate_key, limits.rate.starts, _counts(rows, "key")))
            held = bool(room.keys[-1].full())
        if held and first is not None:
            room.opens_at = first + limits.rate.period
    return room


def _counts(rows: Iterable[Any], name: str = "k") -> dict[Any, int]:
    return {row[name]: int(row["n"]) for row in rows}


def _claimable(backend: Backend, claim: Claim) -> QuerySet[QueueItem]:
    unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=claim.now)
    return claim.model.objects.using(backend.alias).in_line().filter(unexpired)


def _lease(
    backend: Backend, claim: Claim, run: JobRun | None, room: _Room
) -> tuple[list[QueueItem], dict[int, str | None]]:
    """The leased items, and by id the value of the rate's key (when the rate has one)."""
    if not room.keys:
        return backend.claim(replace(claim, count=room.count), run), {}
    picked = _pick(backend, claim, room)
    items = backend.lease_picked(claim, list(picked))
    if items and run is not None:
        run.leased = len(items)
        run.save(using=backend.alias)
    return items, picked


def _pick(backend: Backend, claim: Claim, room: _Room) -> dict[int, str | None]:
    """The ids to lease, each with its rate key's value: the first rows in line whose keys are not full, each key
    within its room."""
    names = [f"nexus_key_{i}" for i in range(len(room.keys))]
    rows = _claimable(backend, claim).annotate(**{n: key_of(k.field) for n, k in zip(names, room.keys, strict=True)})
    for name, keys in zip(names, room.keys, strict=True):
        if full := keys.full():
            rows = rows.filter(_outside(name, full))
    rate_key = claim.model.message_class.queue_options.limits.rate_key
    picked: dict[int, str | None] = {}
    for pk, *values in rows.values_list("pk", *names)[: room.count + SCAN_AHEAD]:
        if len(picked) == room.count:
            break
        if all(k.has_room(v) for k, v in zip(room.keys, values, strict=True)):
            for keys, value in zip(room.keys, values, strict=True):
                keys.take(value)
            picked[pk] = next((v for k, v in zip(room.keys, values, strict=True) if k.field == rate_key), None)
    return picked


def _outside(name: str, full: list[Any]) -> Q:
    """The rows whose key ``name`` holds none of the values in ``full``, None (the keyless group) among them: SQL's
    NULL is neither in an IN list nor out of it, so it is asked for on its own."""
    values = [value for value in full if value is not None]
    others = ~Q(**{f"{name}__in": values}) if values else Q()
    if None in full:
        return Q(**{f"{name}__isnull": False}) & others
    return Q(**{f"{name}__isnull": True}) | others


def _record_starts(
    message_class: type[QueueMessage], items: Sequence[QueueItem], keys: dict[int, str | None], now: datetime
) -> None:
    """Record the leases the rate counts: one row per key value (one in all without a key)."""
    counts: dict[str | None, int] = {}
    for item in items:
        key = keys.get(item.pk)
        counts[key] = counts.get(key, 0) + 1
    queue = message_class.queue_name()
    starts = [LimitedStart(queue=queue, key=key, started_at=now, count=n) for key, n in counts.items()]
    LimitedStart.objects.using(message_class.queue_options.database).bulk_create(starts)
