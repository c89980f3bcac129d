"""Flow limits: declared on the message class, kept by every claim (real database, one process; the workers' own
test is tests/worker/test_limits_workers.py)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import QueueMessage, Status, enqueue_many, lease, mark_processed, set_status
from nexus_queues.backends import backend_for
from nexus_queues.exceptions import ConfigurationError
from nexus_queues.flow_limits import FlowLimits, Rate, parse_rate
from nexus_queues.limited_claims import forget_old_starts, opens_at
from nexus_queues.models import JobRun, LimitedStart
from tests.testapp.more_queues import Beat, Errand, Nudge, Visit
from tests.testapp.queues import Greeting


@pytest.mark.parametrize(
    ("text", "starts", "seconds"),
    [("100/min", 100, 60), ("10/s", 10, 1), (" 5 / 10s ", 5, 10), ("1/hour", 1, 3600), ("3/days", 3, 86400)],
)
def test_parse_rate__reads_starts_per_period(text, starts, seconds):
    """A rate is N starts per unit, or per a multiple of one."""
    assert parse_rate(text) == Rate(starts, timedelta(seconds=seconds))


@pytest.mark.parametrize("text", ["100", "0/min", "10/fortnight", "ten/s", "5/0s", 100])
def test_parse_rate__refuses_what_is_not_a_rate(text):
    """Anything else is refused, naming the value."""
    with pytest.raises(ValueError, match="is not a rate|at least 1"):
        parse_rate(text)


def test_rate__reads_back_as_written():
    """A rate shows as people write it."""
    assert [str(parse_rate(t)) for t in ("100/min", "10/s", "5/10s", "2/h", "1/day")] == [
        "100/min", "10/s", "5/10s", "2/h", "1/day",
    ]  # fmt: skip


def test_flow_limits__described_for_people():
    """The limits in force, in words."""
    assert Visit.queue_options.limits.describe() == ["1 at once per customer"]
    assert Beat.queue_options.limits.describe() == ["10/s"]
    assert not Greeting.queue_options.limits and Greeting.queue_options.limits == FlowLimits()


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"concurrency_limit": 0}, "Bad: concurrency_limit must be a positive int or None, got 0."),
        ({"concurrency_limit": True}, "Bad: concurrency_limit must be a positive int or None, got True."),
        ({"rate_limit": "fast"}, "Bad: rate_limit 'fast' is not a rate such as '100/min'"),
        ({"concurrency_key": "customer"}, "Bad: concurrency_key needs concurrency_limit."),
        ({"rate_limit": "1/s", "rate_key": "shop"}, "Bad: rate_key 'shop' is not a field of the message (its fields: "
                                                    "customer)."),
    ],
)  # fmt: skip
def test_queue_options__refuse_bad_limits_naming_class_and_option(options, problem):
    """A bad limit stops the class being made, with an error naming the class and the option."""
    with pytest.raises(ConfigurationError) as caught:

        class Bad(QueueMessage, queue="bad_limits", **options):
            customer: str

    assert str(caught.value).split("<locals>.", 1)[1].startswith(problem)


pytestmark = pytest.mark.django_db


def earlier(rows, field: str, by: timedelta) -> None:
    """Move ``rows``' ``field`` back ``by``: for the limits, which read the database's clock, that time passed."""
    rows.update(**{field: F(field) - by})


def test_lease__keeps_to_the_concurrency_limit():
    """At most the limit is Leased at once; a finished or expired lease frees its place."""
    enqueue_many([Errand(n=n) for n in range(5)])
    first = lease(Errand, 10)
    assert [i.message.n for i in first] == [0, 1]
    assert lease(Errand, 10) == []
    mark_processed(first[:1])
    assert [i.message.n for i in lease(Errand, 10)] == [2]
    earlier(Errand.queue_items().leased(), "lease_expires_at", timedelta(minutes=31))  # ran out, not yet Abandoned
    assert [i.message.n for i in lease(Errand, 10)] == [3, 4]


def test_lease__an_operator_setting_a_lease_back_to_pending_frees_its_place():
    """A Leased message set back to Pending no longer counts, and is leased again in its turn."""
    enqueue_many([Errand(n=n) for n in range(3)])
    held = lease(Errand, 10)
    set_status(held[:1], Status.PENDING)
    assert [i.message.n for i in lease(Errand, 10)] == [0]


def test_lease__concurrency_per_key_skips_keys_in_use():
    """With a key, each value has its own limit; rows of a full key wait, later rows of other keys go first."""
    enqueue_many([Visit(customer=c, n=n) for n, c in enumerate("aabbac")])
    first = lease(Visit, 10)
    assert [(i.message.customer, i.message.n) for i in first] == [("a", 0), ("b", 2), ("c", 5)]
    assert lease(Visit, 10) == []
    mark_processed([i for i in first if i.message.customer == "a"])
    assert [(i.message.customer, i.message.n) for i in lease(Visit, 10)] == [("a", 1)]


def test_lease__keeps_to_the_rate_in_any_window():
    """At most the rate's starts within any period; the claim says when the window opens again, by this host's
    clock. Time passes for the window as its starts move back (it reads the database's clock)."""
    enqueue_many([Beat(n=n) for n in range(30)])
    starts, half = LimitedStart.objects.filter(queue="beats"), timedelta(milliseconds=500)
    first = timezone.now()
    assert len(lease(Beat, 6)) == 6
    earlier(starts, "started_at", half)
    second = timezone.now()
    assert len(lease(Beat, 6)) == 4
    now = timezone.now()
    assert lease(Beat, 6, now=now) == []
    # The first six leave the window half a second after they were moved, less the time these claims took.
    assert now + half - (timezone.now() - first) <= opens_at(Beat) <= now + half
    earlier(starts, "started_at", half)
    now = timezone.now()
    assert len(lease(Beat, 20, now=now)) == 6  # the first six left the window, the next four not yet
    assert now + half - (timezone.now() - second) <= opens_at(Beat) <= now + half
    earlier(starts, "started_at", 2 * half)
    assert len(lease(Beat, 20)) == 10
    assert sum(starts.values_list("count", flat=True)) == 26


def test_lease__a_rate_that_holds_nothing_back_sets_no_wake_up():
    """A claim that the rate cut short but that left nothing Pending gives the worker no time to wake for."""
    enqueue_many([Beat(n=n) for n in range(10)])
    assert len(lease(Beat, 20)) == 10
    assert opens_at(Beat) is None
    enqueue_many([Beat(n=10)])
    assert lease(Beat, 20) == [] and opens_at(Beat) is not None


def test_lease__rate_per_key():
    """With a key, each value has its own rate."""
    enqueue_many([Nudge(customer=c, n=n) for n, c in enumerate("aaabbc")])
    assert [i.message.n for i in lease(Nudge, 10)] == [0, 1, 3, 4, 5]
    assert lease(Nudge, 10) == []
    earlier(LimitedStart.objects.filter(queue="nudges"), "started_at", timedelta(hours=1))
    assert [i.message.n for i in lease(Nudge, 10)] == [2]


@pytest.mark.parametrize("queue", [Visit, Nudge], ids=["concurrency_key", "rate_key"])
def test_lease__a_limited_claim_makes_as_many_statements_for_twenty_messages_as_for_one(queue):
    """A claim under keyed limits reads and writes in a fixed number of statements: none per message leased."""
    enqueue_many([queue(customer=f"c{n}", n=n) for n in range(41)])
    lease(queue, 1)  # the queue's first claim makes its turn row
    with CaptureQueriesContext(connection) as one:
        assert len(lease(queue, 1)) == 1
    with CaptureQueriesContext(connection) as twenty:
        assert len(lease(queue, 20)) == 20
    assert len(twenty) == len(one)


def test_forget_old_starts__by_the_databases_clock():
    """Housekeeping deletes the starts a rate no longer counts by the database's clock, and keeps the others."""
    database_now = backend_for("default").database_now()
    for ago in (timedelta(hours=2), timedelta(minutes=30)):
        LimitedStart.objects.create(queue="nudges", key="a", started_at=database_now - ago, count=1)
    assert forget_old_starts("default") == 1
    assert list(LimitedStart.objects.values_list("started_at", flat=True)) == [database_now - timedelta(minutes=30)]


def test_lease__records_the_run_of_a_limited_claim():
    """A worker's run is recorded with what the limited claim leased, in the same transaction."""
    enqueue_many([Visit(customer="a"), Visit(customer="b")])
    now = timezone.now()
    run = JobRun(job="visits", queue="visits", correlation_id="cid-1", worker="w", started_at=now)
    items = lease(Visit, 5, correlation_id="cid-1", now=now, run=run)
    assert JobRun.objects.get(correlation_id="cid-1").leased == len(items) == 2
    assert {i.correlation_id for i in Visit.queue_items().leased()} == {"cid-1"}


def test_lease__queue_without_limits_takes_no_turn():
    """A queue without limits claims as it always has: no turn row, no starts recorded."""
    enqueue_many([Greeting(name="x")])
    assert len(lease(Greeting, 5)) == 1
    assert not LimitedStart.objects.exists()
    from nexus_queues.models import LimitTurn

    assert not LimitTurn.objects.filter(queue="greetings").exists()
