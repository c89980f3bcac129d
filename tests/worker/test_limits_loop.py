"""The worker loop beside flow limits: held back, it sleeps until the limit can let a message start, never
spinning (in this process, one sweep at a time; the real processes are in test_limits_workers.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import enqueue_many, lease
from nexus_queues.models import LimitedStart
from nexus_queues.worker.loop import Worker
from tests.testapp.jobs import BeatJob, ErrandJob
from tests.testapp.more_queues import Beat, Errand

pytestmark = pytest.mark.django_db(transaction=True)


def test_worker__held_back_by_a_rate_sleeps_until_its_window_opens():
    """A rate that is used up makes the sweep sleep until the window opens: sooner than the peek delay, and not 0.
    The starts are put ten minutes ahead, so that the window opens in ten minutes."""
    enqueue_many([Beat(n=n) for n in range(3)])
    ahead = timezone.now() + timedelta(minutes=10)
    LimitedStart.objects.create(queue="beats", started_at=ahead, count=10)
    worker = Worker(job_classes=[BeatJob], listen=False, peek_delay=timedelta(hours=1))
    pause = worker.sweep()
    assert 590 < pause <= 601
    assert Beat.queue_items().pending().count() == 3


def test_worker__burst_waits_for_a_rate_rather_than_stop():
    """A burst worker held back by a rate waits for it (its messages are due soon), rather than end undrained."""
    enqueue_many([Beat(n=0)])
    LimitedStart.objects.create(queue="beats", started_at=timezone.now() + timedelta(minutes=10), count=10)
    assert Worker(job_classes=[BeatJob], listen=False, burst=True).sweep() > 0


def test_worker__held_back_by_concurrency_sleeps_the_peek_delay():
    """With every place taken by other leases, the sweep leases nothing and sleeps (the end of a run wakes it)."""
    enqueue_many([Errand(n=n) for n in range(3)])
    lease(Errand, 2)
    worker = Worker(job_classes=[ErrandJob], listen=False, peek_delay=timedelta(seconds=7))
    assert 6 < worker.sweep() <= 7
    assert Errand.queue_items().pending().count() == 1
