"""One job run: each message's outcome is acknowledged, even when the job answers with a time no engine stores."""

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.utils import timezone

from nexus_queues import QueueJob, Status, enqueue_many
from nexus_queues.worker.lease_renewal import LeaseRenewal
from nexus_queues.worker.runs import run_once
from tests.testapp.queues import Audit

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
