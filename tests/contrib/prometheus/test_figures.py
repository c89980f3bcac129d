"""What a scrape reads from the tables: bounded counts, the first Pending wait, health, live processes, totals, and
the time budget that leaves queues out."""

from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import Status, throughput
from nexus_queues.contrib.prometheus.figures import live_workers, queue_figures, read_figures
from nexus_queues.counting import AtLeast
from nexus_queues.messages import HealthStatus
from nexus_queues.overview import present_statuses
from nexus_queues.processes import WorkerProcess, WorkerProcessQueue
from nexus_queues.registry import registry
from nexus_queues.throughput import Throughput
from tests.factories import ErrorFactory, PendingFactory, ProcessedFactory
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Audit, Greeting

pytestmark = pytest.mark.django_db


class TickingClock:
    """Monotonic seconds that move one second each time they are read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def process(*queues: str, seen, stopped=False, dispatches=False) -> WorkerProcess:
    row = WorkerProcess.objects.create(
        kind="worker", host="host", pid=1, version="0", started_at=seen - timedelta(hours=1), last_seen_at=seen,
        stopped_at=seen if stopped else None, dispatches=dispatches, doing="sleeping",
    )
    WorkerProcessQueue.objects.bulk_create(WorkerProcessQueue(process=row, queue=q) for q in queues)
    return row


def test_present_statuses__every_status_once_in_order_custom_ones_too():
    """The loose index scan finds each status present once, built-in and custom, in sort order."""
    for status in (Status.PENDING, Status.ERROR, "OnHold", Status.PENDING, "Archived"):
        PendingFactory.create(queue=Greeting, status=status)
    assert present_statuses(Greeting.queue_items()) == ["Archived", "Error", "OnHold", "Pending"]
    assert present_statuses(Audit.queue_items()) == []


def test_queue_figures__counts_stop_at_the_limit_and_say_so():
    """A status with more rows than the limit counts as AtLeast(limit); one with exactly the limit is exact; the
    built-in statuses no row holds count 0."""
    for _ in range(3):
        PendingFactory.create(queue=Greeting)
    for _ in range(2):
        ErrorFactory.create(queue=Greeting)
    ProcessedFactory.create(queue=Greeting)
    counts = queue_figures(Greeting, timezone.now(), limit=2).counts
    assert counts == {
        "Pending": 2, "Leased": 0, "Processed": 1, "Error": 2, "Abandoned": 0, "Sleeping": 0, "Cancelled": 0
    }
    assert isinstance(counts["Pending"], AtLeast) and not isinstance(counts["Error"], AtLeast)


def test_queue_figures__oldest_pending_wait_is_the_first_in_lines_and_health_is_the_policys():
    """The wait is that of the lowest-id Pending message since it became Pending (a later one that waited longer
    does not count); an Error row makes the queue unhealthy as its health check says."""
    now = timezone.now()
    first, second = PendingFactory.create(queue=Greeting), PendingFactory.create(queue=Greeting)
    Greeting.queue_items().filter(pk=first.pk).update(updated_at=now - timedelta(minutes=2))
    Greeting.queue_items().filter(pk=second.pk).update(updated_at=now - timedelta(hours=1))
    ErrorFactory.create(queue=Greeting)
    found = queue_figures(Greeting, now, limit=100)
    assert found.oldest_pending_wait == timedelta(minutes=2)
    assert found.health is not None and found.health.status == HealthStatus.UNHEALTHY
    assert queue_figures(Ping, now, limit=100).oldest_pending_wait is None


def test_live_workers__counts_live_processes_per_queue_in_one_query(django_assert_num_queries):
    """Stopped and gone processes do not count; a queue nobody serves has 0."""
    now = timezone.now()
    process("greetings", "pings", seen=now)
    process("greetings", seen=now - timedelta(seconds=30))
    process("greetings", seen=now, stopped=True)
    process("greetings", seen=now - timedelta(minutes=5))
    with django_assert_num_queries(1):
        found = live_workers(["greetings", "pings", "audits"], "default", now)
    assert found == {"greetings": 2, "pings": 1, "audits": 0}


def test_read_figures__skips_the_queues_left_once_the_budget_is_spent():
    """Queue tables are read in order until the budget is spent, the rest are skipped; the totals and live
    processes, one query per database, are read for every queue all the same."""
    now = timezone.now()
    queues = [Audit, Greeting, Ping]
    PendingFactory.create(queue=Ping)
    throughput.record("pings", now, Throughput(processed=4, runs=1, run_seconds=0.5), using="default")
    process(dispatches=True, seen=now)
    figures = read_figures(queues, now=now, budget=timedelta(seconds=2.5), limit=10, clock=TickingClock())
    assert (list(figures.queues), figures.skipped) == (["audits", "greetings"], ["pings"])
    assert figures.totals == {"pings": Throughput(processed=4, runs=1, run_seconds=0.5)}
    assert figures.live_workers == {"audits": 0, "greetings": 0, "pings": 0}
    assert figures.live_dispatch_loops == {"default": 1}


def test_read_figures__reads_every_queue_within_the_budget():
    """With time to spare every registered queue is read and none skipped."""
    figures = read_figures(registry, now=timezone.now(), budget=timedelta(minutes=1), limit=10)
    assert (list(figures.queues), figures.skipped) == ([cls.queue_name() for cls in registry], [])


@pytest.mark.django_db(databases=["default", "queues"])
def test_read_figures__reads_each_database_once_for_the_queues_it_holds(elsewhere, django_assert_num_queries):
    """A queue kept in another database has its totals and live workers read there; each database answers one
    query for the totals, one for the live workers and one for its dispatch loops."""
    with django_assert_num_queries(3, using="queues"), django_assert_num_queries(3, using="default"):
        figures = read_figures([Greeting, elsewhere], now=timezone.now(), budget=timedelta(0), limit=10)
    assert figures.skipped == ["greetings", "elsewhere"]
    assert figures.live_workers == {"greetings": 0, "elsewhere": 0}
    assert figures.live_dispatch_loops == {"default": 0, "queues": 0}
