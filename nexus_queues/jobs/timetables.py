"""When a worker runs scheduled work: pure steps over a job's schedule that take ``now``, so tests need no clock."""

from __future__ import annotations

from datetime import datetime

from .schedules import EPOCH, Schedule


class QueueTimetable:
    """A scheduled queue job drains its queue from a tick, or a new start request, until a run leases nothing; a
    worker that was down across ticks drains once when it comes back."""

    def __init__(self, schedule: Schedule, last_drain: datetime) -> None:
        self.schedule = schedule
        self.last_drain = last_drain
        self.draining = False
        self.next_tick = schedule.following(last_drain)
        self.request_seen: datetime | None = None
        """The start request last seen: a stored request is new when it differs from it."""
        self._first_look = True

    def due(self, now: datetime, requested_at: datetime | None) -> bool:
        """Should the worker lease for the job now? Starts a drain at a tick, or for a request not seen before."""
        if not self.draining and (self._new_request(requested_at) or now >= self.next_tick):
            self.draining, self.last_drain = True, now
            self.next_tick = self.schedule.following(now)
        return self.draining

    def _new_request(self, requested_at: datetime | None) -> bool:
        """A request is told from the last one by its value, not by this host's clock: one stored by a host whose
        clock runs behind is new all the same. One standing at the first look is new when it came after the queue's
        last run (a request made while no worker ran)."""
        first_look, self._first_look = self._first_look, False
        if requested_at is None or requested_at == self.request_seen:
            return False
        self.request_seen = requested_at
        return not first_look or requested_at > self.last_drain

    def ran_dry(self) -> None:
        """The queue had nothing to lease: the drain is over until the next tick or request."""
        self.draining = False


class PeriodicTimetable:
    """What a worker should try to claim of a periodic job: the latest tick after the last one handled (ticks missed
    while no worker ran collapse into one), and a run request newer than the last one handled."""

    def __init__(self, schedule: Schedule, since: datetime) -> None:
        self.schedule = schedule
        self.since = since
        """Ticks after this time are still to be handled."""
        self.request_since = EPOCH
        """Requests after this time are still to be handled (a request still stored is unanswered: answering one
        clears it)."""
        self.next_tick = schedule.following(since)

    def due_tick(self, now: datetime) -> datetime | None:
        """The tick to claim now, or None before the next one."""
        return self.schedule.latest(now) if now >= self.next_tick else None

    def due_request(self, requested_at: datetime | None) -> datetime | None:
        """The request to claim (its time is its tick), or None when there is none new."""
        return requested_at if _after(requested_at, self.request_since) else None

    def tick_handled(self, tick: datetime) -> None:
        """``tick`` was claimed (here or by another worker) or skipped: wait for the one after it."""
        self.since = max(self.since, tick)
        self.next_tick = self.schedule.following(self.since)

    def request_handled(self, requested_at: datetime) -> None:
        """The request was claimed (here or by another worker) or refused."""
        self.request_since = max(self.request_since, requested_at)


def _after(moment: datetime | None, then: datetime) -> bool:
    return moment is not None and moment > then
