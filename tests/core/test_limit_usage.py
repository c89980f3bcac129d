"""What the faces show of a queue's limits: their use, and the Pending messages that wait on them."""

import pytest
from django.utils import timezone

from nexus_queues import enqueue_many, lease
from nexus_queues.limit_usage import limit_usage
from tests.testapp.more_queues import Beat, Errand, Nudge, Tour, Visit
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db


def test_limit_usage__none_for_a_queue_without_limits():
    """A queue without limits reads nothing more."""
    assert limit_usage(Greeting, timezone.now(), 100) is None


def test_limit_usage__every_pending_message_waits_while_the_queue_is_full():
    """At its concurrency limit, every Pending message of the queue waits on it."""
    enqueue_many([Errand(n=n) for n in range(5)])
    usage = limit_usage(Errand, timezone.now(), 100)
    assert (usage.leased, usage.waiting) == (0, 0)
    lease(Errand, 10)
    usage = limit_usage(Errand, timezone.now(), 100)
    assert (usage.leased, usage.waiting) == (2, 3)
    assert usage.describe() == "2 at once: 2 in use; 3 Pending wait on them"
    assert str(limit_usage(Errand, timezone.now(), 2).waiting) == "2+"


def test_limit_usage__only_messages_of_full_keys_wait():
    """With a key, the Pending messages of key values at their limit wait; the others do not."""
    enqueue_many([Visit(customer=c) for c in "aabbbc"])
    lease(Visit, 2)  # a and b
    usage = limit_usage(Visit, timezone.now(), 100)
    assert (usage.leased, usage.full_keys, usage.waiting) == (2, 2, 3)


def test_limit_usage__rate_counts_the_starts_in_its_period():
    """A rate shows the starts within its period, and holds every Pending message back once reached."""
    enqueue_many([Beat(n=n) for n in range(12)])
    lease(Beat, 20)
    usage = limit_usage(Beat, timezone.now(), 100)
    assert (usage.started, usage.waiting) == (10, 2)
    assert usage.describe() == "10/s: 10 in the last period; 2 Pending wait on them"


def test_limit_usage__rate_per_key():
    """A rate with a key holds back the messages of the key values that reached it."""
    enqueue_many([Nudge(customer=c) for c in "aaab"])
    lease(Nudge, 10)
    usage = limit_usage(Nudge, timezone.now(), 100)
    assert (usage.started, usage.full_keys, usage.waiting) == (3, 1, 1)


def test_limit_usage__messages_without_a_key_wait_as_one_key():
    """Messages whose key is null or missing are one key: at its limit, the other ones wait on it."""
    enqueue_many([Tour(), Tour(guide="a")])
    lease(Tour, 5)
    ids = enqueue_many([Tour(n=1)], return_ids=True).ids
    Tour.queue_model.objects.filter(pk__in=ids).update(message={"n": 1})  # stored without the field
    usage = limit_usage(Tour, timezone.now(), 100)
    assert (usage.leased, usage.full_keys, usage.waiting) == (2, 2, 1)
