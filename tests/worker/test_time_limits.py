"""Time limits in process: a job past its limit is stopped where it was, its message set to Error naming the limit
(or retried by the job's rule), and the run goes on with the next message. Real worker processes: test_stopping.py."""

import threading
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta

import pytest

from nexus_queues import QueueJob, Status, enqueue_many
from nexus_queues.exceptions import ConfigurationError, TimeLimitExceeded
from nexus_queues.jobs import Outcome
from nexus_queues.models import JobRun, QueueItem
from nexus_queues.testing import drain
from nexus_queues.worker.time_limits import TimeLimits
from tests.testapp.queues import Greeting, Inventory

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = timedelta(milliseconds=300)


def spin() -> None:
    """Python code that never ends on its own: interruptible in any thread."""
    while True:
        time.sleep(0.01)


class Limited(QueueJob, abstract=True):
    """``spin`` runs forever; ``catch`` spins but catches the limit and returns; the others are done at once."""

    message_class = Greeting
    time_limit = LIMIT

    def process(self, message: Greeting) -> None:
        if message.name == "spin":
            spin()
        if message.name == "catch":
            try:
                spin()
            except TimeLimitExceeded:
                return None


class LimitedRetrying(Limited, abstract=True):
    max_attempts = 2
    backoff = timedelta(minutes=5)


class LimitedBatch(QueueJob, abstract=True):
    """The batch form: a batch holding ``slow`` spins; the limit is the time limit times the batch's size."""

    message_class = Inventory
    time_limit = LIMIT

    def process_batch(self, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
        if any(item.message.sku == "slow" for item in items):
            spin()
        return {}


def test_time_limit__stops_the_message_sets_error_and_goes_on():
    """The spinning message is stopped and set to Error naming the job's limit; the messages after it are processed."""
    enqueue_many([Greeting(name="a"), Greeting(name="spin"), Greeting(name="b")])
    drained = drain(Limited)
    assert (drained.processed, drained.errors) == (2, 1)
    (failed,) = Greeting.queue_model.objects.all()
    assert failed.status == Status.ERROR and failed.message.name == "spin"
    assert failed.error_type.endswith("TimeLimitExceeded")
    assert f"ran past {Limited.name()}.time_limit (0:00:00.300000) and was stopped" in failed.error_message
    assert "in spin" in failed.error_traceback, "the traceback shows where the job was stopped"


def test_time_limit__retries_by_the_jobs_rule():
    """With attempts left, a message past its limit sleeps until its retry, its error kept."""
    enqueue_many([Greeting(name="spin")])
    drained = drain(LimitedRetrying)
    assert drained.rescheduled == 1
    item = Greeting.queue_model.objects.get()
    assert item.status == Status.SLEEPING and item.attempts == 1
    assert item.error_type.endswith("TimeLimitExceeded")


def test_time_limit__a_job_that_catches_it_finishes_as_it_says():
    """A job may catch TimeLimitExceeded to clean up: what it then returns is its outcome."""
    enqueue_many([Greeting(name="catch")])
    assert drain(Limited).processed == 1


def test_time_limit__batch_form_gets_the_limit_times_its_size():
    """A process_batch job is stopped as a whole: every item of the batch fails with the batch's limit."""
    from tests.testapp.queues import Inventory as Message

    enqueue_many([Message(sku="slow", quantity=1), Message(sku="x", quantity=2)])
    drained = drain(LimitedBatch)
    assert drained.errors == 2
    messages = set(Message.queue_model.objects.values_list("status", "error_message"))
    assert {status for status, _ in messages} == {Status.ERROR}
    assert {text for _, text in messages} == {
        f"Processing a batch of 2 ran past 2 x {LimitedBatch.name()}.time_limit (0:00:00.600000) and was stopped."
    }
    assert JobRun.objects.get(queue="inventory").errors == 2


@pytest.mark.parametrize("value", [timedelta(0), timedelta(seconds=-1), 5])
def test_time_limit__must_be_a_positive_timedelta(value):
    """A time limit that is not a positive timedelta is refused when the job is defined."""
    with pytest.raises(ConfigurationError, match="time_limit must be a positive timedelta or None"):
        type("BadLimit", (QueueJob,), {"message_class": Greeting, "time_limit": value, "__module__": __name__})


def test_time_limits__code_blocked_in_c_is_settled_after_the_grace():
    """A call that cannot be interrupted (a thread blocked in C) is settled by the watchdog once the grace has
    passed, while it still runs; the exception it would have got is dropped when it returns."""
    limits = TimeLimits(timedelta(milliseconds=100))
    limits.start()
    settled = threading.Event()
    release = threading.Event()
    results = []

    def blocked() -> str:
        release.wait()  # a lock wait in C: an asynchronous exception waits for it
        return "returned"

    def call() -> None:
        results.append(limits.call(blocked, timedelta(milliseconds=100), settled.set))

    caller = threading.Thread(target=call)
    caller.start()
    try:
        assert settled.wait(60), "the watchdog never settled the blocked call"
    finally:
        release.set()
        caller.join(60)
        limits.stop()
    (limited,) = results
    assert limited.settled
    assert isinstance(limited.result, TimeLimitExceeded) or limited.result == "returned"


def test_time_limits__no_exception_lands_after_the_call_returned():
    """Calls that end about when their limit passes: each returns its result or the exception, and none is raised
    into the caller's code afterwards."""
    limits = TimeLimits(timedelta(seconds=60))
    limits.start()
    try:
        for n in range(40):
            ends = time.monotonic() + 0.01 + (n % 5) * 0.001

            def work(ends: float = ends) -> str:
                while time.monotonic() < ends:
                    pass
                return "done"

            limited = limits.call(work, timedelta(milliseconds=10 + (n % 3) * 2), lambda: None)
            assert limited.result == "done" or isinstance(limited.result, TimeLimitExceeded)
            quiet = time.monotonic() + 0.03
            while time.monotonic() < quiet:  # Python code: a stray exception would be raised here
                pass
    finally:
        limits.stop()
