"""The one backoff: pauses over a run of failures, shared by the worker's circuit breakers and the broker's outages."""

import importlib
from datetime import timedelta

import pytest

from nexus_queues.backoff import FIRST_BACKOFF, Backoff
from nexus_queues.contrib.rabbitmq.outages import Outage
from nexus_queues.worker import breaker
from nexus_queues.worker.breaker import CircuitBreaker


class Clock:
    def __init__(self):
        self.now = 50.0

    def __call__(self):
        return self.now


def test_backoff__pauses_double_up_to_the_maximum():
    """0.1 s after the first failure, doubled after each further one, never above the maximum."""
    backoff = Backoff("db", timedelta(seconds=1))
    pauses = []
    for _ in range(6):
        backoff.record_failure()
        pauses.append(backoff.pause())
    assert pauses == [FIRST_BACKOFF, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_backoff__failing_for_counts_from_the_first_failure_and_reset_ends_the_run():
    """The run's length is measured from its first failure; a reset starts the next run afresh."""
    clock = Clock()
    backoff = Backoff("db", timedelta(seconds=30), clock=clock)
    assert backoff.failing_for() == 0.0
    backoff.record_failure()
    clock.now += 3
    backoff.record_failure()
    assert (backoff.failures, backoff.failing_for(), backoff.failing_for(clock.now + 1)) == (2, 3.0, 4.0)
    backoff.reset()
    assert (backoff.failures, backoff.failing_for()) == (0, 0.0)
    backoff.record_failure()
    assert backoff.pause() == FIRST_BACKOFF


def test_backoff__breaker_and_outage_pause_alike():
    """A circuit breaker (not yet triggered) and a broker outage ask for the same pauses: one implementation."""
    breaker_ = CircuitBreaker("db", timedelta(days=1), timedelta(seconds=5), clock=Clock())
    outage = Outage("The broker", timedelta(seconds=5))
    assert isinstance(breaker_, Backoff) and isinstance(outage, Backoff)
    assert [breaker_.failure(OSError()) for _ in range(8)] == [outage.failure(OSError()) for _ in range(8)]


@pytest.mark.parametrize(("name", "home"), [
    ("DATABASE_ERRORS", "nexus_queues.connections"), ("reset_connections", "nexus_queues.connections"),
    ("FIRST_BACKOFF", "nexus_queues.backoff"),
])
def test_breaker__moved_names_warn(name, home):
    """The connection-error names read from the worker's breaker module are the new homes', with a warning."""
    with pytest.warns(DeprecationWarning, match=rf"nexus_queues.worker.breaker.{name} is deprecated: import {home}"):
        found = getattr(breaker, name)
    assert found is getattr(importlib.import_module(home), name)
