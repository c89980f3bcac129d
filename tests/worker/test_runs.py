"""One job run: each message's outcome is acknowledged, even when the job answers with a time no engine stores."""

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import QueueJob, Status, enqueue_many
from nexus_queues.models import JobRun
from nexus_queues.signals import processed
from nexus_queues.throughput import QueueMinute
from nexus_queues.worker.lease_renewal import LeaseRenewal
from nexus_queues.worker.runs import run_once
from tests.testapp.queues import Audit, Greeting

pytestmark = pytest.mark.django_db

BEFORE_YEAR_1 = datetime(1, 1, 1, tzinfo=dt_timezone(timedelta(hours=14)))
AFTER_9999 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt_timezone(timedelta(hours=-10)))


class Clock(QueueJob, abstract=True):
    """Answers each audit event with a time: ``done`` none, ``later`` in an hour, the others out of range."""

    message_class = Audit

    def process(self, message: Audit) -> datetime | None:
        times = {"done": None, "later": timezone.now() + timedelta(hours=1), "ancient": BEFORE_YEAR_1}
        return times.get(message.event, AFTER_9999)


class Stubborn(QueueJob, abstract=True):
    """Fails every audit and would retry it only after the year 9999."""

    message_class = Audit
    max_attempts = 3
    backoff = timedelta(days=3_000_000)

    def process(self, message: Audit) -> None:
        raise ValueError(f"cannot audit {message.event}")


def audits(*events: str) -> None:
    enqueue_many([Audit(event=event) for event in events], status=Status.PENDING)


def rows() -> dict[str, object]:
    return {row.message.event: row for row in Audit.queue_model.objects.all()}


def test_run_once__unstorable_returned_time_fails_that_message_only():
    """A returned time outside the supported range sets that message to Error; the others are acknowledged."""
    audits("done", "ancient", "later", "far")
    assert run_once(Clock, LeaseRenewal()) == 4
    found = rows()
    assert {event: row.status for event, row in found.items()} == {
        "done": Status.PROCESSED, "ancient": Status.ERROR, "later": Status.SLEEPING, "far": Status.ERROR,
    }
    assert found["ancient"].error_message == (
        "the time the job returned: 0001-01-01T00:00:00+14:00 is outside the supported range "
        "1000-01-01T00:00:00+00:00 to 9999-12-30T23:59:59.999999+00:00 (EARLIEST_DATETIME to LATEST_DATETIME)."
    )
    assert found["far"].error_type == "nexus_queues.exceptions.UnstorableValue"
    assert found["ancient"].process_at is found["far"].process_at is None


def test_run_once__retry_time_out_of_range_sets_error():
    """A failure whose retry would come after the supported range is set to Error with the job's exception."""
    audits("x")
    assert run_once(Stubborn, LeaseRenewal()) == 1
    row = Audit.queue_model.objects.get()
    assert (row.status, row.error_message, row.process_at) == (Status.ERROR, "cannot audit x", None)


class Quiet(QueueJob, abstract=True):
    """Processes every greeting, writing nothing of its own."""

    message_class = Greeting

    def process(self, message: Greeting) -> None:
        pass


def run_quietly() -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        leased = run_once(Quiet, LeaseRenewal())
    return leased, [q["sql"] for q in queries.captured_queries]


def test_run_once__all_processed_ends_the_run_and_counts_it():
    """A run whose messages were all processed deletes them, records its end and counts them in its minute: in one
    statement after the claim where the engine can (PostgreSQL), else in one transaction."""
    enqueue_many([Greeting(name=str(n)) for n in range(3)])
    leased, statements = run_quietly()
    run = JobRun.objects.get(queue="greetings")
    assert leased == 3 and not Greeting.queue_items().exists()
    assert (run.leased, run.processed, run.errors, run.rescheduled) == (3, 3, 0, 0) and run.finished_at is not None
    minute = QueueMinute.objects.get(queue="greetings")
    assert (minute.processed, minute.errors, minute.runs) == (3, 0, 1)
    if connection.vendor == "postgresql":
        assert len(statements) == 2, statements


def test_run_once__all_processed_tells_the_processed_receivers_once_committed(django_capture_on_commit_callbacks):
    """The ``processed`` receivers hear of every message the run processed, once the acknowledgement committed."""
    enqueue_many([Greeting(name="a"), Greeting(name="b")])
    told = []

    def receiver(sender, items, **kwargs):
        told.extend(item.message.name for item in items)

    processed.connect(receiver, sender=Greeting)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            leased, _ = run_quietly()
    finally:
        processed.disconnect(receiver, sender=Greeting)
    assert leased == 2 and sorted(told) == ["a", "b"] and not Greeting.queue_items().exists()
    assert JobRun.objects.get(queue="greetings").processed == 2
