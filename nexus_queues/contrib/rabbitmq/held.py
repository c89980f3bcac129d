"""Invalid bodies that ``<from>.invalid`` refused: held unacknowledged, offered to it again with backoff.

A body held stays the broker's: if the consumer stops or its connection breaks, the broker delivers
it again. While bodies are held the consumer keeps storing valid ones; once ``prefetch`` of them are
held, the broker sends no more and consumption waits until the queue takes them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sequence
from datetime import timedelta

import pika

from nexus_queues.backoff import FIRST_BACKOFF
from nexus_queues.failures import message_of
from nexus_queues.health import QueueHealth
from nexus_queues.status import HealthStatus

from .bodies import Delivery

logger = logging.getLogger("nexus_queues.rabbitmq")

REFUSALS: tuple[type[BaseException], ...] = (
    pika.exceptions.NackError, pika.exceptions.UnroutableError, pika.exceptions.ChannelClosed,
)
"""How a dead-letter publish fails while the connection stays up: the queue is full (``reject-publish``), gone,
or the broker closed the publishing channel."""


class Held:
    """The bodies ``queue`` refused, by delivery tag, each with why it is invalid."""

    def __init__(self, queue: str, max_backoff: timedelta) -> None:
        self.queue = queue
        self.max_backoff = max_backoff.total_seconds()
        self.bodies: dict[int, tuple[Delivery, str]] = {}
        self.refusal: str | None = None
        """Why the queue last refused a body."""
        self.failures = 0
        self._next_offer = 0.0

    def hold(self, delivery: Delivery, reason: str, exc: BaseException) -> None:
        """Keep ``delivery`` (invalid for ``reason``) unacknowledged, since the queue refused it with ``exc``."""
        self.bodies[delivery.tag] = (delivery, reason)
        self.refusal = refusal(exc)
        logger.warning(
            "Invalid body (message_id %s): %s; %s refused it (%s): held unacknowledged, offered again later; "
            "%s held.", delivery.properties.message_id, reason, self.queue, self.refusal, len(self.bodies),
            extra={"action": "invalid_held"},
        )
        if not self.failures:
            self.refused(exc)

    def refused(self, exc: BaseException) -> None:
        """The queue refused an offer with ``exc``: pause before the next, twice as long as the last."""
        self.failures += 1
        self.refusal = refusal(exc)
        self._next_offer = time.monotonic() + min(self.max_backoff, FIRST_BACKOFF * 2 ** min(self.failures - 1, 60))

    def taken(self, tag: int) -> None:
        """The queue took the body of ``tag``; once it took them all, say so."""
        self.bodies.pop(tag, None)
        if not self.bodies and self.failures:
            logger.info("%s takes invalid bodies again.", self.queue, extra={"action": "invalid_released"})
            self.failures, self.refusal = 0, None

    def due(self) -> bool:
        """Are bodies held, and has the pause since the last refusal passed?"""
        return bool(self.bodies) and time.monotonic() >= self._next_offer

    def forget(self) -> None:
        """The connection closed: the broker has the held bodies back, and will deliver them again."""
        self.bodies = {}
        self.failures, self.refusal = 0, None

    def health(self, prefetch: int) -> QueueHealth:
        """Degraded while bodies are held; unhealthy once ``prefetch`` are, since then nothing more is consumed."""
        if not self.bodies:
            return QueueHealth(HealthStatus.HEALTHY)
        stalled = len(self.bodies) >= prefetch
        return QueueHealth(HealthStatus.UNHEALTHY if stalled else HealthStatus.DEGRADED, (
            f"{len(self.bodies)} invalid body(ies) held unacknowledged: {self.queue} refused them "
            f"({self.refusal}){'; nothing more is consumed until it takes them' if stalled else ''}",
        ))


def refusal(exc: BaseException) -> str:
    """What a dead-letter publish failing with ``exc`` means, for an operator."""
    if isinstance(exc, pika.exceptions.NackError):
        return "nack: the queue is full with overflow reject-publish, or the broker could not store it"
    if isinstance(exc, pika.exceptions.UnroutableError):
        return "unroutable: the queue does not exist"
    return f"{type(exc).__name__}: {message_of(exc) or 'no reason given'}"


def frames(tags: Sequence[int], kept: Collection[int]) -> list[tuple[int, bool]]:
    """``(tag, multiple)`` acknowledgements (or nacks) of ``tags``, ascending, that answer none of ``kept``: one
    ``multiple`` frame for the tags below the first kept one, then one frame per tag."""
    first_kept = min(kept, default=None)
    below = [tag for tag in tags if first_kept is None or tag < first_kept]
    above = [(tag, False) for tag in tags if first_kept is not None and tag > first_kept]
    return ([(below[-1], True)] if below else []) + above
