"""A batch's completion with real ``nexus_worker`` processes: enqueued once however many workers race, with errors
in the batch, when workers are killed at random moments, and counts that follow an operator's retry."""

import random
import signal
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import Status, abandon_expired_leases, enqueue_many, update_status
from nexus_queues.models import Batch
from tests.commands import reports, stop_workers, wait_until
from tests.testapp.more_queues import Ping
from tests.testapp.queues import BatchReport, Greeting

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WORKER = ("nexus_worker", "--peek-delay", "0.1")


def done_lines(files) -> list[list[str]]:
    return [words for words in reports(files) if words[0] == "batch_done"]


def batch_counts(batch_id: int) -> tuple[int, int, int, int]:
    batch = Batch.objects.get(pk=batch_id)
    return batch.total, batch.processed, batch.error, batch.cancelled


def test_batch__four_racing_workers_complete_it_once_with_its_errors(manage, files):
    """400 greetings, 40 of which fail, over four workers: one completion, given 360 processed and 40 errors.
    An operator then retries the errors: the counts drop, rise again as they fail again, and nothing completes
    twice."""
    names = ["fail" if n % 10 == 0 else "hello" for n in range(400)]
    # The four wait idle first, and each greeting takes 5 ms: one started before the others (a loaded machine), or
    # one holding SQLite's write lock run after run while the others' busy handlers back off, drained it alone.
    workers = [
        manage(*WORKER, "--queue", "greetings", "--queue", "batch_reports", NEXUS_TEST_GREETING_SLEEP="0.005")
        for _ in range(4)
    ]
    for worker in workers:
        worker.wait_logged("Worker started")
    batch = enqueue_many(
        [Greeting(name=name, times=n) for n, name in enumerate(names)], batch="race", on_complete=BatchReport()
    ).batch
    wait_until(lambda: done_lines(files), "the batch's completion to run", workers[0])
    assert batch_counts(batch) == (400, 360, 40, 0)
    assert done_lines(files)[0][1:6] == [str(batch), "400", "360", "40", "0"]
    assert len({words[-2] for words in reports(files) if words[0] == "hello"}) > 1, "the workers did not race"

    assert update_status(Greeting, Status.PENDING, status=Status.ERROR) == 40
    assert batch_counts(batch)[2] == 0
    wait_until(lambda: batch_counts(batch)[2] == 40, "the retried errors to fail again", workers[0])
    stop_workers(*workers)
    assert batch_counts(batch) == (400, 360, 40, 0)
    assert len(done_lines(files)) == 1
    assert [item.status for item in BatchReport.queue_items()] == [Status.PROCESSED]


def test_batch__completes_once_when_workers_are_killed_at_random_moments(manage, files):
    """Workers killed with SIGKILL at random moments while they process, fail and retry a batch's members: what a
    killed worker held becomes Abandoned, an operator runs it again, and the completion is enqueued exactly once
    with every member counted once."""
    rng = random.Random(30)
    pings = [Ping(n=-n if n % 25 == 0 else n) for n in range(1, 301)]
    batch = enqueue_many(pings, batch="chaos", on_complete=BatchReport()).batch
    env = {"NEXUS_TEST_BATCH": "7", "NEXUS_TEST_PING_SLEEP": "0.01"}
    start = lambda: manage(*WORKER, "--queue", "pings", "--with-dispatch", **env)  # noqa: E731
    workers = [start() for _ in range(4)]
    kills = 0
    while kills < 12 and Ping.queue_items().exclude(status=Status.ERROR).exists():
        time.sleep(rng.uniform(0.05, 0.6))
        victim = workers.pop(rng.randrange(len(workers)))
        victim.proc.send_signal(signal.SIGKILL)
        victim.finish()
        kills += 1
        workers.append(start())
    stop_workers(*workers)
    # What the killed workers held is theirs no longer: an operator runs it again, until nothing is left.
    while Ping.queue_items().exclude(status__in=[Status.ERROR]).exists():
        abandon_expired_leases(timezone.now() + timedelta(hours=1))
        update_status(Ping, Status.PENDING, status=Status.ABANDONED)
        assert manage(*WORKER, "--queue", "pings", "--with-dispatch", "--burst", **env).finish() == 0
        if Ping.queue_items().filter(status=Status.SLEEPING).exists():
            time.sleep(0.3)  # a retry's backoff: the next burst's dispatch loop wakes it
    assert kills >= 1
    assert batch_counts(batch) == (300, 288, 12, 0)
    assert BatchReport.queue_items().count() == 1
    assert manage(*WORKER, "--queue", "batch_reports", "--burst").finish() == 0
    assert [words[1:6] for words in done_lines(files)] == [[str(batch), "300", "288", "12", "0"]]
    processed = Counter(int(words[1]) for words in reports(files) if words[0] == "ping")
    assert set(processed) == {n for n in range(1, 301) if n % 25}
