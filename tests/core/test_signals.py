"""Signals: sent once per call after the change commits, to the queue's receivers only, never losing a change."""

import logging
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from nexus_queues import abandon_expired_leases, enqueue, enqueue_many, lease, mark_error, mark_processed
from nexus_queues import signals as nexus_signals
from tests.factories import GreetingFactory
from tests.testapp.more_queues import Ping
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit callbacks run only in real transactions


@pytest.fixture
def received():
    """``received(signal, sender)``: connects a receiver for the test; returns the list of its calls' kwargs."""
    connected = []

    def connect(signal, sender=Greeting):
        calls = []

        def receiver(sender, signal, **kwargs):
            calls.append({"sender": sender, **kwargs})

        signal.connect(receiver, sender=sender, weak=False)
        connected.append((signal, receiver, sender))
        return calls

    yield connect
    for signal, receiver, sender in connected:
        signal.disconnect(receiver, sender=sender)


def names(items):
    return sorted(item.message.name for item in items)


def test_enqueued__once_per_enqueue_with_its_result(received):
    """enqueue sends ``enqueued`` once, with the call's EnqueueResult, after the row is stored."""
    calls = received(nexus_signals.enqueued)
    result = enqueue(Greeting(name="x"))
    assert calls == [{"sender": Greeting, "result": result}]
    assert Greeting.queue_model.objects.count() == 1


def test_enqueued__once_per_enqueue_many_with_the_ids(received):
    """enqueue_many sends ``enqueued`` once for the whole batch; the ids are there when asked for."""
    calls = received(nexus_signals.enqueued)
    result = enqueue_many(GreetingFactory.build_batch(3), return_ids=True)
    assert [call["result"] for call in calls] == [result]
    assert sorted(calls[0]["result"].ids) == sorted(Greeting.queue_model.objects.values_list("pk", flat=True))


def test_enqueued__only_to_the_receivers_of_its_queue(received):
    """A receiver connected for one queue hears nothing of another."""
    greetings, pings = received(nexus_signals.enqueued), received(nexus_signals.enqueued, Ping)
    enqueue(Ping(n=1))
    assert (len(greetings), len(pings)) == (0, 1)


def test_enqueued__waits_for_the_callers_commit_and_is_dropped_on_rollback(received):
    """Inside a caller's transaction the signal comes once it commits, and never when it rolls back."""
    calls = received(nexus_signals.enqueued)
    with transaction.atomic():
        enqueue(Greeting(name="committed"))
        assert calls == []
    assert len(calls) == 1
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue(Greeting(name="rolled back"))
        raise RuntimeError("rolled back")
    assert len(calls) == 1
    assert names(Greeting.queue_model.objects.all()) == ["committed"]


def test_leased__with_the_leased_items(received):
    """lease sends ``leased`` once with the items it leased, each with the lease's correlation id."""
    calls = received(nexus_signals.leased)
    enqueue_many(GreetingFactory.build_batch(3))
    items = lease(Greeting, 2, correlation_id="run-1")
    assert [call["items"] for call in calls] == [items]
    assert {item.correlation_id for item in calls[0]["items"]} == {"run-1"}
    assert lease(Greeting, 5, correlation_id="run-2") and len(calls) == 2
    lease(Greeting, 5)  # nothing left: no signal
    assert len(calls) == 2


def test_processed__with_the_items_whose_lease_held(received):
    """mark_processed sends ``processed`` with the items it completed, not those whose lease was lost."""
    calls = received(nexus_signals.processed)
    enqueue_many(GreetingFactory.build_batch(2))
    kept, lost = lease(Greeting, 2)
    Greeting.queue_model.objects.filter(pk=lost.pk).update(correlation_id="someone else")
    assert mark_processed([kept, lost]) == [kept.pk]
    assert [call["items"] for call in calls] == [[kept]]


def test_failed__with_the_items_and_the_exception(received):
    """mark_error sends ``failed`` with the items set to Error and the exception."""
    calls = received(nexus_signals.failed)
    enqueue(Greeting(name="x"))
    items = lease(Greeting, 1)
    error = ValueError("bad")
    mark_error(items, error)
    assert calls == [{"sender": Greeting, "items": items, "exc": error}]


def test_abandoned__with_the_count(received):
    """Expired leases becoming Abandoned send ``abandoned`` with how many, per queue that had some."""
    calls, pings = received(nexus_signals.abandoned), received(nexus_signals.abandoned, Ping)
    enqueue_many(GreetingFactory.build_batch(2))
    lease(Greeting, 2, lease_time=timedelta(seconds=1))
    later = timezone.now() + timedelta(minutes=1)
    abandon_expired_leases(later)
    assert (calls, pings) == ([{"sender": Greeting, "count": 2, "now": later}], [])


def test_a_raising_receiver__loses_nothing_and_is_logged(received, caplog):
    """A receiver that raises is logged by our logger; the change stands and the other receivers still run."""

    def broken(**kwargs):
        raise RuntimeError("receiver broke")

    nexus_signals.enqueued.connect(broken, sender=Greeting, weak=False)
    try:
        calls = received(nexus_signals.enqueued)
        with caplog.at_level(logging.ERROR, logger="nexus_queues.signals"):
            result = enqueue(Greeting(name="x"))
    finally:
        nexus_signals.enqueued.disconnect(broken, sender=Greeting)
    assert [call["result"] for call in calls] == [result]
    assert Greeting.queue_model.objects.pending().count() == 1
    [record] = [r for r in caplog.records if r.name == "nexus_queues.signals"]
    assert (record.action, str(record.exc_info[1])) == ("receiver_failed", "receiver broke")


def test_no_receiver__nothing_is_scheduled(django_capture_on_commit_callbacks):
    """Without receivers for the queue, no on-commit callback is even registered (zero cost)."""
    with transaction.atomic(), django_capture_on_commit_callbacks() as callbacks:
        enqueue(Greeting(name="x"))
        lease(Greeting, 1)
    assert [c for c in callbacks if c.__module__ == nexus_signals.__name__] == []
