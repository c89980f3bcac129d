"""Riding out a broker that went away: capped exponential pauses, one warning per outage, one note at recovery."""

from __future__ import annotations

import logging
from datetime import timedelta

from nexus_queues.failures import message_of

logger = logging.getLogger("nexus_queues.rabbitmq")

FIRST_BACKOFF = 0.1
"""Seconds of the pause after the first failure; each further failure doubles it, up to the maximum."""


class Outage:
    """The failures of one connection since it last worked."""

    def __init__(self, name: str, max_backoff: timedelta) -> None:
        self.name = name
        self.max_backoff = max_backoff.total_seconds()
        self.failures = 0

    def failure(self, exc: BaseException) -> float:
        """Record a failure; return the seconds to pause before trying again. Only an outage's first is a warning."""
        self.failures += 1
        log = logger.warning if self.failures == 1 else logger.debug
        log("%s is away (%s: %s); retrying with backoff up to %s s.", self.name, type(exc).__name__,
            message_of(exc) or "no reason given", self.max_backoff, extra={"action": "broker_away"})
        # The exponent is capped so that a long outage cannot overflow the float.
        return min(self.max_backoff, FIRST_BACKOFF * 2 ** min(self.failures - 1, 60))

    def success(self) -> None:
        """The connection works (again): log a recovery, and start the next outage's backoff afresh."""
        if self.failures:
            logger.info("%s is back after %s failed attempt(s).", self.name, self.failures,
                        extra={"action": "broker_back"})
        self.failures = 0
