"""Flow limits kept across real ``nexus_worker`` processes: each run records its start and end (or its lease time),
and the test computes what ran at once, or started within any one second."""

from __future__ import annotations

from bisect import bisect_left

import pytest

from nexus_queues import enqueue_many
from tests.commands import reports, stop_workers, wait_until
from tests.testapp.more_queues import Beat, Errand

pytestmark = pytest.mark.slow


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most intervals that overlap at any moment (one ending as another starts does not overlap it)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, change in events:
        running += change
        most = max(most, running)
    return most


def most_within(times: list[float], period: float) -> int:
    """The most ``times`` within any window ``[t, t + period)``."""
    times = sorted(times)
    return max((bisect_left(times, t + period) - i for i, t in enumerate(times)), default=0)


def test_most_at_once__counts_overlaps():
    """The overlap count the tests below rely on."""
    assert most_at_once([(0, 2), (1, 3), (2, 4), (2.5, 5)]) == 3
    assert most_at_once([(0, 1), (1, 2)]) == 1
    assert most_within([0, 0.5, 0.99, 1.0, 1.5], 1.0) == 3


def test_workers__four_workers_with_a_limit_of_two_never_run_three_at_once(manage, files):
    """Four workers of two threads each share a queue limited to 2 at once: no moment has three runs."""
    enqueue_many([Errand(n=n) for n in range(24)])
    env = {"NEXUS_TEST_ERRAND_SLEEP": "0.15"}
    args = ("nexus_worker", "--queue", "errands", "--concurrency", "2", "--peek-delay", "0.5")
    workers = [manage(*args, **env) for _ in range(4)]
    wait_until(lambda: sum(w[0] == "errand-end" for w in reports(files)) >= 24, "24 errands run")
    stop_workers(*workers)
    lines = reports(files)
    starts = {int(w[1]): float(w[2]) for w in lines if w[0] == "errand-start"}
    ends = {int(w[1]): float(w[2]) for w in lines if w[0] == "errand-end"}
    assert sorted(starts) == sorted(ends) == list(range(24))
    assert most_at_once([(starts[n], ends[n]) for n in starts]) <= 2
    assert len({w[3] for w in lines}) > 1, "the workers did not share the queue"
    assert not Errand.queue_model.objects.exists()


def test_workers__a_rate_of_ten_a_second_never_starts_eleven_within_a_second(manage, files):
    """Four workers share a queue limited to 10 starts a second for over 10 s: no one-second window holds more."""
    enqueue_many([Beat(n=n) for n in range(110)])
    workers = [manage("nexus_worker", "--queue", "beats", "--concurrency", "2") for _ in range(4)]
    wait_until(lambda: sum(w[0] == "beat" for w in reports(files)) >= 110, "110 beats run")
    stop_workers(*workers)
    lines = [w for w in reports(files) if w[0] == "beat"]
    assert sorted(int(w[1]) for w in lines) == list(range(110))
    leased = [float(w[2]) for w in lines]
    assert max(leased) - min(leased) >= 10, "the rate did not hold the 110 starts back over 10 s"
    assert most_within(leased, 1.0) <= 10
    assert len({w[3] for w in lines}) > 1, "the workers did not share the queue"
