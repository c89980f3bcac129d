"""Finished runs counted per queue and minute: recorded in one statement, read by minute or all time, and folded
into an all-time row after a day without the totals ever going down."""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from nexus_queues import QueueJob, Status, enqueue_many, throughput
from nexus_queues.throughput import ALL_TIME, MINUTES_KEPT, QueueMinute, Throughput
from nexus_queues.worker.lease_renewal import LeaseRenewal
from nexus_queues.worker.runs import run_once
from tests.races import together
from tests.testapp.queues import Audit

NOW = datetime(2026, 11, 23, 21, 30, 42, 500_000, tzinfo=UTC)


class HalfFail(QueueJob, abstract=True):
    """Fails the audits whose event starts with "bad"."""

    message_class = Audit

    def process(self, message: Audit) -> None:
        if message.event.startswith("bad"):
            raise ValueError(message.event)


def add(queue: str, at: datetime, processed: int = 1, errors: int = 0, seconds: float = 0.5) -> None:
    throughput.record(queue, at, Throughput(processed, errors, runs=1, run_seconds=seconds), using="default")


@pytest.mark.django_db
def test_record__adds_runs_of_the_same_minute_into_one_row():
    """Two runs finishing in the same minute add up in one row keyed by the minute's start; the next minute gets
    its own."""
    add("greetings", NOW, processed=3, errors=1, seconds=0.25)
    add("greetings", NOW + timedelta(seconds=10), processed=2, seconds=0.5)
    add("greetings", NOW + timedelta(seconds=20))
    minute = NOW.replace(second=0, microsecond=0)
    assert throughput.per_minute("greetings", NOW - timedelta(hours=1), using="default") == {
        minute: Throughput(processed=5, errors=1, runs=2, run_seconds=0.75),
        minute + timedelta(minutes=1): Throughput(processed=1, errors=0, runs=1, run_seconds=0.5),
    }


@pytest.mark.django_db
def test_per_minute__reads_from_the_minute_of_since_only_that_queue():
    """Minutes before ``since``'s minute and other queues' minutes are left out."""
    add("greetings", NOW - timedelta(minutes=10))
    add("greetings", NOW - timedelta(minutes=2))
    add("prices", NOW)
    since = NOW - timedelta(minutes=2, seconds=30)
    assert list(throughput.per_minute("greetings", since, using="default")) == [
        (NOW - timedelta(minutes=2)).replace(second=0, microsecond=0)
    ]


@pytest.mark.django_db
def test_totals__sum_every_minute_and_the_all_time_row_per_queue():
    """All-time counts per queue include the folded row; a queue that never finished a run is absent."""
    QueueMinute.objects.create(queue="greetings", minute=ALL_TIME, processed=100, errors=7, runs=10, run_seconds=9.0)
    add("greetings", NOW, processed=5, errors=1, seconds=1.0)
    add("prices", NOW, processed=2)
    found = throughput.totals(["greetings", "prices", "audits"], using="default")
    assert [type(n) for n in vars(found["greetings"]).values()] == [int, int, int, float]
    assert found == {
        "greetings": Throughput(processed=105, errors=8, runs=11, run_seconds=10.0),
        "prices": Throughput(processed=2, errors=0, runs=1, run_seconds=0.5),
    }


@pytest.mark.django_db
@override_settings(NEXUS_QUEUES={"WORKER_CLEANUP_BATCH_SIZE": 2})
def test_fold__moves_minutes_older_than_a_day_into_the_all_time_row_and_keeps_the_totals():
    """Minutes older than MINUTES_KEPT go, over several batches, into each queue's all-time row: the totals stay
    as they were, the recent minutes stay apart, and a second fold finds nothing."""
    for age in (timedelta(days=3), timedelta(days=2), MINUTES_KEPT + timedelta(minutes=2), timedelta(hours=1)):
        add("greetings", NOW - age, processed=2, errors=1)
    add("prices", NOW - timedelta(days=5), processed=7)
    before = throughput.totals(["greetings", "prices"], using="default")
    assert throughput.fold("default", NOW) == 4
    assert throughput.totals(["greetings", "prices"], using="default") == before
    assert set(QueueMinute.objects.values_list("queue", "minute")) == {
        ("greetings", ALL_TIME), ("prices", ALL_TIME),
        ("greetings", (NOW - timedelta(hours=1)).replace(second=0, microsecond=0)),
    }
    assert throughput.fold("default", NOW) == 0


@pytest.mark.django_db
def test_run_once__records_a_finished_runs_counts_in_its_minute():
    """A run's processed and errors (and its time from lease to finish) land in its queue's minute; a run that
    leases nothing records nothing."""
    enqueue_many([Audit(event=e) for e in ("ok-1", "ok-2", "bad-1")], status=Status.PENDING)
    started = timezone.now()
    assert run_once(HalfFail, LeaseRenewal()) == 3
    assert run_once(HalfFail, LeaseRenewal()) == 0
    [(minute, counts)] = throughput.per_minute("audits", started, using="default").items()
    assert throughput.minute_of(started) <= minute <= throughput.minute_of(timezone.now())
    assert (counts.processed, counts.errors, counts.runs) == (2, 1, 1)
    assert 0 <= counts.run_seconds <= (timezone.now() - started).total_seconds()


@pytest.mark.django_db(transaction=True)
def test_record__concurrent_first_adds_to_a_minute_never_fail_or_lose_a_count():
    """Threads that add to a minute no row holds yet all land: the row is made and added to in one statement,
    so none of them races another to create it."""

    def adder() -> None:
        for _ in range(5):
            add("greetings", NOW, processed=1, seconds=0.1)

    together(*[adder] * 8)
    assert throughput.totals(["greetings"], using="default")["greetings"].processed == 8 * 5
