"""A worker's connection lost under a run, on real servers: killed by the server before the acknowledgement, or cut
after the acknowledgement committed, its reply lost. The worker looks up what the lost attempt did and writes again
what did not commit, while the lease lasts: nothing run twice, counted twice, or left Leased."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TypeVar

import pytest
from django.db import OperationalError, connection, connections

from nexus_queues import Status, enqueue_many, signals
from nexus_queues.backends import backend_for
from nexus_queues.models import JobRun
from nexus_queues.throughput import totals
from nexus_queues.worker.lease_renewal import LeaseRenewal
from nexus_queues.worker.runs import run_chained, run_once
from tests.commands import kill_other_connections
from tests.testapp.jobs import PingJob
from tests.testapp.more_queues import Ping

from .proxy import Proxy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engines("postgresql", "mysql")]

OUTCOMES = {"all processed": [1, 2, 3, 4, 5], "one retried": [1, 2, 3, -4, 5]}
"""The pings of a run: a negative ping fails and is retried later, which takes the acknowledgement of several
statements (a transaction) where all processed takes one."""
T = TypeVar("T")
PORTS = {"postgresql": 5432, "mysql": 3306}
EXECUTE = b"E\x00\x00\x00\x09\x00\x00\x00\x00\x00"
"""PostgreSQL's Execute message (unnamed portal, every row): a statement run, its reply sent once it committed (a
first Parse, which psycopg sends on its own before a statement it prepares, is let through)."""
COMMIT = {"postgresql": b"COMMIT", "mysql": b"\x03COMMIT"}
"""A COMMIT as the client sends it (MariaDB's query command byte first: its SET AUTOCOMMIT holds the word too)."""


def committed(one_statement: bool) -> bytes:
    """What the client sends for a write to commit: the statement itself in autocommit, else COMMIT."""
    return EXECUTE if one_statement and connection.vendor == "postgresql" else COMMIT[connection.vendor]


@pytest.fixture
def out(tmp_path, monkeypatch):
    """The file each processed ping is reported to."""
    monkeypatch.setenv("NEXUS_TEST_OUT", str(tmp_path / "out"))
    return tmp_path / "out"


@pytest.fixture
def proxy(transactional_db) -> Iterator[Proxy]:
    """This thread's connection goes through a proxy to the test database's server (other threads' go direct)."""
    direct = connection.settings_dict
    with Proxy((direct["HOST"] or "127.0.0.1", int(direct["PORT"] or PORTS[connection.vendor]))) as started:
        connection.close()
        connection.settings_dict = {**direct, "HOST": "127.0.0.1", "PORT": started.port}
        try:
            yield started
        finally:
            connection.close()
            connection.settings_dict = direct


@contextmanager
def once_leased(action: Callable[[], None]) -> Iterator[None]:
    """``action()`` when the first pings are leased (their claim committed), before they are processed."""
    done = threading.Event()

    def receiver(sender, items, **kwargs):
        if not done.is_set():
            done.set()
            action()

    signals.leased.connect(receiver, sender=Ping, weak=False)
    try:
        yield
    finally:
        signals.leased.disconnect(receiver, sender=Ping)


def elsewhere(work: Callable[[], T]) -> T:
    """``work()`` in another thread, on its own connections (straight to the server)."""
    done: list[T] = []

    def run() -> None:
        try:
            done.append(work())
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return done[0]


def killed_by_the_server() -> None:
    """The server ends this thread's connection (pg_terminate_backend, KILL), asked from another connection."""
    elsewhere(kill_other_connections)


def pings(out) -> Counter[int]:
    return Counter(int(line.split()[1]) for line in out.read_text().splitlines() if line.startswith("ping "))


def assert_acknowledged_once(numbers: list[int], out) -> None:
    """Each ping ran once; the processed ones are gone, the failed one waits for its retry; the run and its queue's
    counts hold each message once."""
    assert pings(out) == Counter(n for n in numbers if n > 0)
    rows = dict(Ping.queue_items().values_list("message__n", "status"))
    assert rows == {n: Status.SLEEPING for n in numbers if n < 0}
    run = JobRun.objects.get(queue=Ping.queue_name())
    assert (run.leased, run.processed, run.rescheduled, run.finished_at is not None) == (
        len(numbers), sum(n > 0 for n in numbers), sum(n < 0 for n in numbers), True
    )
    counted = totals([Ping.queue_name()], using="default")[Ping.queue_name()]
    assert (counted.processed, counted.runs) == (sum(n > 0 for n in numbers), 1)


@pytest.mark.parametrize("numbers", OUTCOMES.values(), ids=OUTCOMES.keys())
def test_run__acknowledged_after_the_server_killed_its_connection(numbers, out):
    """The connection is killed while the job runs: the acknowledgement meets it gone, reconnects and is written."""
    enqueue_many([Ping(n=n) for n in numbers])
    with once_leased(killed_by_the_server):
        assert run_once(PingJob, LeaseRenewal()) == len(numbers)
    assert_acknowledged_once(numbers, out)


@pytest.mark.parametrize("numbers", OUTCOMES.values(), ids=OUTCOMES.keys())
def test_run__acknowledgement_committed_with_its_reply_lost_counts_once(numbers, out, proxy):
    """The connection is cut after the acknowledgement committed: the worker finds it written and writes nothing
    again (no run counted twice, no lease reported lost)."""
    enqueue_many([Ping(n=n) for n in numbers])
    one_statement = backend_for("default").features.acknowledges_in_one_statement and min(numbers) > 0
    with once_leased(lambda: proxy.drop_reply_after(committed(one_statement))):
        assert run_once(PingJob, LeaseRenewal()) == len(numbers)
    assert proxy.dropped == 1
    assert_acknowledged_once(numbers, out)


def test_run__claim_committed_with_its_reply_lost_is_found(out, proxy):
    """The connection is cut after the claim committed: the worker finds the rows it leased and runs them."""
    numbers = OUTCOMES["all processed"]
    enqueue_many([Ping(n=n) for n in numbers])
    proxy.drop_reply_after(committed(one_statement=True))
    assert run_once(PingJob, LeaseRenewal()) == len(numbers)
    assert proxy.dropped == 1
    assert_acknowledged_once(numbers, out)


def test_runs_in_a_row__acknowledgement_written_with_the_next_claim_counts_once(out, proxy, monkeypatch):
    """A drain's runs in a row, the next claim cut after it committed: on PostgreSQL that one statement also wrote
    the previous run's acknowledgement, both are found; elsewhere the claim is."""
    monkeypatch.setattr(PingJob, "batch_size", 3)
    enqueue_many([Ping(n=n) for n in range(1, 7)])
    renewal = LeaseRenewal()
    leased, previous = run_chained(PingJob, renewal, None, None)
    proxy.drop_reply_after(committed(one_statement=True))
    leased, last = run_chained(PingJob, renewal, None, previous)
    if last is not None:
        last.write()
    assert (leased, proxy.dropped) == (3, 1)
    assert pings(out) == Counter(range(1, 7))
    assert not Ping.queue_items().exists()
    runs = JobRun.objects.filter(queue=Ping.queue_name(), finished_at__isnull=False)
    assert list(runs.values_list("leased", "processed")) == [(3, 3)] * 2
    counted = totals([Ping.queue_name()], using="default")[Ping.queue_name()]
    assert (counted.processed, counted.runs) == (6, 2)


def test_run__gives_up_when_the_lease_ends_first(out, proxy, monkeypatch):
    """A server that stays gone past the lease: the worker stops trying when the lease ends, and raises the loss;
    the messages stay Leased, to become Abandoned."""
    monkeypatch.setattr(PingJob, "lease_time", timedelta(seconds=1))
    numbers = OUTCOMES["all processed"]
    enqueue_many([Ping(n=n) for n in numbers])

    def gone() -> None:
        proxy.close()
        connection.close()

    with once_leased(gone), pytest.raises(OperationalError):
        run_once(PingJob, LeaseRenewal())
    assert pings(out) == Counter(numbers)
    assert elsewhere(lambda: set(Ping.queue_items().values_list("status", flat=True))) == {Status.LEASED}
