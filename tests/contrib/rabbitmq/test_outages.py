"""Backoff and logging while the broker is away."""

from __future__ import annotations

import logging
from datetime import timedelta

from nexus_queues.contrib.rabbitmq.outages import Outage


def test_outage__backoff_doubles_up_to_the_maximum_and_starts_afresh(caplog):
    """Pauses double from 0.1 s up to the maximum; a recovery is logged at info and the next outage
    starts at 0.1 s again, with a warning of its own."""
    outage = Outage("The broker", timedelta(seconds=1))
    with caplog.at_level(logging.INFO, "nexus_queues.rabbitmq"):
        first = [outage.failure(ConnectionRefusedError("refused")) for _ in range(6)]
        outage.success()
        second = outage.failure(ConnectionRefusedError("refused"))
    assert first == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert second == 0.1
    assert [(r.levelname, r.action) for r in caplog.records] == [
        ("WARNING", "broker_away"), ("INFO", "broker_back"), ("WARNING", "broker_away")
    ]
    assert "after 6 failed attempt(s)" in caplog.records[1].getMessage()


def test_outage__a_long_outage_keeps_the_longest_pause():
    """Thousands of failures in a row never overflow: the pause stays at the maximum."""
    outage = Outage("The broker", timedelta(seconds=30))
    pauses = [outage.failure(OSError("gone")) for _ in range(5000)]
    assert pauses[-1] == 30.0
