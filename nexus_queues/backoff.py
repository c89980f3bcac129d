"""Backoff: the growing pauses with which a process rides out a failing database or broker, without busy-looping."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

FIRST_BACKOFF = 0.1
"""Seconds of the pause after the first failure; each further failure doubles it, up to the maximum."""


class Backoff:
    """A run of failures of one operation, and the pause each asks for: :data:`FIRST_BACKOFF` after the first,
    doubled after each further one, never more than ``max_backoff``."""

    def __init__(self, name: str, max_backoff: timedelta, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.max_backoff = max_backoff.total_seconds()
        self.clock = clock
        self.failures = 0
        self.failing_since: float | None = None

    def record_failure(self) -> float:
        """Count a failure; return the clock's time of it."""
        now = self.clock()
        if self.failing_since is None:
            self.failing_since = now
        self.failures += 1
        return now

    def pause(self) -> float:
        """Seconds to pause after the failures counted so far."""
        # The exponent is capped so that a long outage cannot overflow the float.
        return min(self.max_backoff, FIRST_BACKOFF * 2 ** min(max(self.failures - 1, 0), 60))

    def failing_for(self, now: float | None = None) -> float:
        """Seconds from the first of the failures in a row to ``now`` (default: the clock's), 0 while it works."""
        if self.failing_since is None:
            return 0.0
        return (self.clock() if now is None else now) - self.failing_since

    def reset(self) -> None:
        """The operation works (again): the next failure starts a new run."""
        self.failures, self.failing_since = 0, None
