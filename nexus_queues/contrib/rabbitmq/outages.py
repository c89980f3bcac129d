"""Riding out a broker that went away: capped exponential pauses, one warning per outage, one note at recovery."""

from __future__ import annotations

import logging

from nexus_queues.backoff import Backoff
from nexus_queues.failures import message_of

logger = logging.getLogger("nexus_queues.rabbitmq")


class Outage(Backoff):
    """The failures of one connection since it last worked."""

    def failure(self, exc: BaseException) -> float:
        """Record a failure; return the seconds to pause before trying again. Only an outage's first is a warning."""
        self.record_failure()
        log = logger.warning if self.failures == 1 else logger.debug
        log("%s is away (%s: %s); retrying with backoff up to %s s.", self.name, type(exc).__name__,
            message_of(exc) or "no reason given", self.max_backoff, extra={"action": "broker_away"})
        return self.pause()

    def success(self) -> None:
        """The connection works (again): log a recovery, and start the next outage's backoff afresh."""
        if self.failures:
            logger.info("%s is back after %s failed attempt(s).", self.name, self.failures,
                        extra={"action": "broker_back"})
        self.reset()
