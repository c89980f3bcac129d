"""Lease renewal: a thread that renews the leases of the messages a worker holds while their job runs."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from django.db import reset_queries
from django.utils import timezone

from ..backoff import Backoff
from ..connections import reset_connections
from ..failures import message_of
from ..updates import renew_leases
from .beating import BeatingThread

if TYPE_CHECKING:
    from ..models import QueueItem

logger = logging.getLogger("nexus_queues.lease_renewal")

RENEWALS_PER_LEASE = 3
"""Renew three times per lease time, so two renewals may fail before a lease runs out."""


@dataclass
class _Held:
    items: Sequence[QueueItem]
    lease_time: timedelta
    renew_at: float = field(default=0.0)
    failures: Backoff = field(init=False)
    """The renewals that failed in a row: the next one comes sooner than the interval (the database restarted)."""

    def __post_init__(self) -> None:
        self.failures = Backoff("lease renewal", self.lease_time / RENEWALS_PER_LEASE)


class LeaseRenewal(BeatingThread):
    """Renews held leases every ``lease_time / 3``: a lease time detects a crash, it does not cap run time."""

    def __init__(self) -> None:
        super().__init__("nexus-lease-renewal")
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()
        self._next_beat = 0.0
        """When the thread's wait ends (monotonic): a hold renewed later needs no wake-up, which costs a run a
        thread switch."""

    def hold(self, correlation_id: str, items: Sequence[QueueItem], lease_time: timedelta) -> None:
        """Start renewing the leases of ``items``."""
        interval = lease_time.total_seconds() / RENEWALS_PER_LEASE
        renew_at = time.monotonic() + interval
        with self._lock:
            self._held[correlation_id] = _Held(items, lease_time, renew_at)
            early = renew_at < self._next_beat
        if early:
            self._wake.set()

    def release(self, correlation_id: str) -> None:
        """Stop renewing; waits for a renewal in progress, so none lands after the job's acknowledgement."""
        with self._lock:
            self._held.pop(correlation_id, None)

    def in_hand(self) -> list[dict[str, str]]:
        """The runs whose leases are held: their queue and correlation id."""
        held = self._held.copy()  # one C call under the GIL: safe while a run thread holds or releases
        return [{"queue": h.items[0].message_class.queue_name(), "correlation_id": cid} for cid, h in held.items()]

    def _beat(self) -> float:
        """Renew what is due; seconds until the next renewal."""
        reset_queries()
        with self._lock:
            now = time.monotonic()
            for correlation_id, held in self._held.items():
                if held.renew_at <= now:
                    held.renew_at = now + self._renew(correlation_id, held)
            self._next_beat = min((h.renew_at for h in self._held.values()), default=now + 60)
            return self._next_beat - now

    def _renew(self, correlation_id: str, held: _Held) -> float:
        """Renew ``held``'s leases; the seconds until the next renewal: a full interval, or a growing pause after a
        failure, so that a database back from a restart renews them well before they end."""
        try:
            renew_leases(held.items, timezone.now() + held.lease_time)
        except Exception as exc:  # a renewal thread that ended would let every long job lose its lease
            held.failures.record_failure()
            logger.warning(
                "Could not renew %s lease(s) (%s: %s); retrying in %.1f s.", len(held.items),
                type(exc).__name__, message_of(exc), held.failures.pause(),
                extra={"action": "lease_renewal", "nexus.correlation_id": correlation_id},
            )
            reset_connections()
            return held.failures.pause()
        held.failures.reset()
        return held.lease_time.total_seconds() / RENEWALS_PER_LEASE
