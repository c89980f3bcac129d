"""Circuit breakers on a fake clock; the worker's peek-delay warning; log filter."""

import logging
from datetime import timedelta

import pytest

from nexus_queues.worker.breaker import CircuitBreaker, CircuitBreakers
from nexus_queues.worker.logs import CorrelationIdFilter, correlation_id
from nexus_queues.worker.loop import check_peek_delay


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_circuit_breaker__backs_off_more_each_failure_then_triggers(caplog):
    """Pauses double from 0.1 s; once failing for trigger_after it logs an error and pauses the most."""
    clock = Clock()
    breaker = CircuitBreaker("db", timedelta(seconds=30), timedelta(seconds=10), clock=clock)
    assert [breaker.failure(OSError("down")) for _ in range(4)] == [0.1, 0.2, 0.4, 0.8]
    assert not breaker.triggered
    clock.now += 30
    assert breaker.failure(OSError("down")) == 10
    assert breaker.triggered
    assert [r.levelname for r in caplog.records if "circuit breaker triggered" in r.message] == ["ERROR"]


def test_circuit_breaker__long_outage_before_it_triggers_keeps_the_longest_pause():
    """Thousands of failures within a long trigger_after pause the most, never overflow the doubling."""
    breaker = CircuitBreaker("db", timedelta(days=1), timedelta(seconds=10), clock=Clock())
    assert {breaker.failure(OSError("down")) for _ in range(2000)} >= {10}
    assert breaker.failure(OSError("down")) == 10 and not breaker.triggered


def test_circuit_breaker__success_resets_it(caplog):
    """After a success the next failure starts from the shortest pause again, and recovery is logged."""
    caplog.set_level(logging.INFO)
    clock = Clock()
    breaker = CircuitBreaker("db", timedelta(seconds=1), timedelta(seconds=10), clock=clock)
    breaker.failure(OSError())
    clock.now += 5
    breaker.failure(OSError())
    breaker.success()
    assert (breaker.failures, breaker.triggered) == (0, False)
    assert breaker.failure(OSError()) == 0.1
    assert any("recovered after 2 failure(s)" in r.message for r in caplog.records)


def test_circuit_breaker__waiting_is_what_is_left_of_the_pause():
    """After a failure the operation waits out the pause it was given; a success ends the wait."""
    clock = Clock()
    breaker = CircuitBreaker("queue", timedelta(seconds=30), timedelta(seconds=10), clock=clock)
    assert breaker.waiting() == 0
    assert breaker.failure(OSError("down")) == 0.1
    clock.now += 0.04
    assert breaker.waiting() == pytest.approx(0.06)
    clock.now += 0.06
    assert breaker.waiting() == 0
    breaker.failure(OSError("down"))
    breaker.success()
    assert breaker.waiting() == 0


def test_check_peek_delay__warns_outside_100_ms_to_10_s(caplog):
    """A peek delay under 100 ms or over 10 s is logged as a warning; inside the range it is not."""
    for seconds in (0.05, 1, 10, 11):
        check_peek_delay(timedelta(seconds=seconds))
    assert [r.levelname for r in caplog.records] == ["WARNING", "WARNING"]
    assert "under 100 ms" in caplog.records[0].message and "over 10 s" in caplog.records[1].message


def test_correlation_id_filter__stamps_records_with_the_current_run():
    """Records get the run's correlation id, '-' outside a run, and keep one given explicitly."""
    stamp = CorrelationIdFilter()
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    stamp.filter(record)
    assert record.__dict__["nexus.correlation_id"] == "-"
    token = correlation_id.set("abc")
    try:
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
        stamp.filter(record)
        assert record.__dict__["nexus.correlation_id"] == "abc"
    finally:
        correlation_id.reset(token)


def test_circuit_breakers__one_per_name_made_on_first_use():
    """Each name gets its own breaker, the same one every time, titled with the name."""
    breakers = CircuitBreakers("Queue {}", timedelta(seconds=30), timedelta(seconds=5))
    assert breakers["pings"] is breakers["pings"]
    assert breakers["pings"] is not breakers["greetings"]
    assert breakers["pings"].name == "Queue pings" and breakers["pings"].max_backoff == 5
    breakers["pings"].failure(RuntimeError("down"))
    assert breakers["greetings"].failures == 0
