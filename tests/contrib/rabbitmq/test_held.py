"""Invalid bodies held unacknowledged: the acknowledgement frames that spare them, and the health they give."""

from __future__ import annotations

from datetime import timedelta

import pika

from nexus_queues.contrib.rabbitmq.bodies import Delivery
from nexus_queues.contrib.rabbitmq.held import Held, frames
from nexus_queues.messages import HealthStatus


def delivery(tag: int) -> Delivery:
    return Delivery(tag, b"not json", pika.BasicProperties(message_id=f"m{tag}"), "", "in")


def test_frames__one_multiple_frame_when_nothing_is_kept():
    """A batch with nothing kept is acknowledged by one frame, as before."""
    assert frames([4, 5, 6], set()) == [(6, True)]


def test_frames__kept_tags_are_never_answered():
    """Below the first kept tag one multiple frame; past it one frame per tag, so no kept tag is acknowledged."""
    assert frames([1, 2, 4, 6], {3, 5}) == [(2, True), (4, False), (6, False)]
    assert frames([7, 8], {2}) == [(7, False), (8, False)]
    assert frames([], {2}) == []


def test_held__health_degraded_then_unhealthy_at_prefetch():
    """Healthy with nothing held; degraded while some are, naming the queue and why; unhealthy once ``prefetch``
    are held, since then the broker sends nothing more."""
    held = Held("in.invalid", timedelta(seconds=30))
    assert held.health(prefetch=2).status == HealthStatus.HEALTHY
    held.hold(delivery(1), "Invalid JSON", pika.exceptions.NackError([]))
    health = held.health(prefetch=2)
    assert health.status == HealthStatus.DEGRADED
    assert "1 invalid body(ies) held unacknowledged: in.invalid refused them (nack" in health.summary
    held.hold(delivery(2), "Invalid JSON", pika.exceptions.UnroutableError([]))
    health = held.health(prefetch=2)
    assert health.status == HealthStatus.UNHEALTHY and "unroutable: the queue does not exist" in health.summary
    held.taken(1)
    held.taken(2)
    assert held.health(prefetch=2).status == HealthStatus.HEALTHY
