"""Routing keys of the delay levels."""

from __future__ import annotations

import pytest

from nexus_queues.contrib.rabbitmq.delays import MAX_DELAY, InvalidDelay, routing_key


def test_routing_key__the_references_ten_seconds() -> None:
    """A delay of 10 s (1010 in binary) sets the bits of 8 and 2 seconds, then names the destination."""
    assert routing_key(10, "destination") == "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.1.0.destination"


def test_routing_key__past_the_largest_delay() -> None:
    """One second more than 28 bits hold is refused, naming the limit."""
    with pytest.raises(InvalidDelay, match="268,435,455"):
        routing_key(MAX_DELAY + 1, "destination")
