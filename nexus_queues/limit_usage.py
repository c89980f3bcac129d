"""How much of a queue's flow limits is in use, and how many Pending messages wait on them: what the admin, the
dashboard and the metrics show. Read only for queues with limits, from the rows the claim counts itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from .counting import count_up_to
from .flow_limits import FlowLimits
from .limited_claims import key_of, live_leases, starts_within
from .messages import QueueMessage


@dataclass(frozen=True)
class LimitUsage:
    """A queue's limits and their use at one moment."""

    limits: FlowLimits
    leased: int
    """Messages Leased now whose lease has not run out (what the concurrency limit counts)."""
    started: int
    """Leases within the rate's period (what the rate counts; 0 without a rate)."""
    full_keys: int
    """Key values at their limit now (for limits with a key)."""
    waiting: int
    """Pending messages that the limits hold back now (counted up to a limit): all of them while a limit of the
    whole queue is reached, else those whose key is at its limit."""

    def describe(self) -> str:
        """``"2 at once: 2 in use; 10/s: 7 in the last period; 5 Pending wait"``."""
        parts = []
        if self.limits.concurrency is not None:
            parts.append(f"{self.limits.describe()[0]}: {self.leased} in use")
        if self.limits.rate is not None:
            parts.append(f"{self.limits.describe()[-1]}: {self.started} in the last period")
        if self.full_keys:
            parts.append(f"{self.full_keys} key value(s) at their limit")
        return "; ".join([*parts, f"{self.waiting} Pending wait on them"])


def limit_usage(message_class: type[QueueMessage], now: datetime, limit: int) -> LimitUsage | None:
    """The use of the queue's limits at ``now`` (None for a queue without limits); waiting messages counted up to
    ``limit``."""
    limits = message_class.queue_options.limits
    if not limits:
        return None
    leases, starts = live_leases(message_class, now), starts_within(message_class, now)
    leased = leases.count()
    started = starts.aggregate(n=Sum("count"))["n"] or 0
    pending = message_class.queue_items().pending()
    full: dict[str, list[str | None]] = {}
    if limits.concurrency_key is not None:
        used = leases.annotate(k=key_of(limits.concurrency_key)).values("k").annotate(n=Count("pk"))
        full[limits.concurrency_key] = [row["k"] for row in used if row["n"] >= limits.concurrency]
    if limits.rate_key is not None and limits.rate is not None:
        used = starts.values("key").annotate(n=Sum("count"))
        full.setdefault(limits.rate_key, []).extend(row["key"] for row in used if row["n"] >= limits.rate.starts)
    if _whole_queue_full(limits, leased, started):
        waiting = count_up_to(pending, limit)
    else:
        waiting = count_up_to(_of_keys(pending, full), limit)
    return LimitUsage(limits, leased, started, sum(len(v) for v in full.values()), waiting)


def _whole_queue_full(limits: FlowLimits, leased: int, started: int) -> bool:
    if limits.concurrency is not None and limits.concurrency_key is None and leased >= limits.concurrency:
        return True
    return limits.rate is not None and limits.rate_key is None and started >= limits.rate.starts


def _of_keys(rows: QuerySet[Any], values_by_field: dict[str, list[str | None]]) -> QuerySet[Any]:
    """The ``rows`` whose field holds one of the values given for it."""
    wanted = Q()
    for i, (name, values) in enumerate(values_by_field.items()):
        if values:
            rows = rows.annotate(**{f"nexus_key_{i}": key_of(name)})
            wanted |= Q(**{f"nexus_key_{i}__in": [v for v in values if v is not None]})
            if None in values:
                wanted |= Q(**{f"nexus_key_{i}__isnull": True})
    return rows.filter(wanted) if wanted else rows.none()
