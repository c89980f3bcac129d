"""What flow limits cost the claim: ``lease(queue, BATCH)`` on queues alike but for their limits, in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench PYTHONPATH=$PWD \\
        python tests/benchmarks/bench_limits.py

Each queue gets N messages (untimed); then, round after round so that every queue sees the same load, one client
times ``lease(queue, BATCH)`` until the round's share is leased, marking each batch processed (untimed) so that
the limits, set far above the load, never hold a claim back: what is measured is what the limit's bookkeeping
costs, not waiting. Prints the median and mean claim in microseconds, and each against the queue without limits.
The database is migrated first; the queues' tables are made for the run (``tests.testapp.scratch``) and dropped at
the end.
"""

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from nexus_queues import QueueMessage, enqueue_many, lease, mark_processed  # noqa: E402
from nexus_queues.models import LimitedStart  # noqa: E402

N = int(os.environ.get("N", 3000))
BATCH = int(os.environ.get("BATCH", 10))
ROUNDS = int(os.environ.get("ROUNDS", 5))
SCRATCH = "tests.testapp.scratch"


class BenchPlain(QueueMessage, queue="bench_plain"):
    __module__ = SCRATCH
    k: int


class BenchConcurrency(QueueMessage, queue="bench_concurrency", concurrency_limit=100_000):
    __module__ = SCRATCH
    k: int


class BenchConcurrencyKey(QueueMessage, queue="bench_concurrency_key", concurrency_limit=100_000, concurrency_key="k"):
    __module__ = SCRATCH
    k: int


class BenchRate(QueueMessage, queue="bench_rate", rate_limit="1000000/s"):
    __module__ = SCRATCH
    k: int


class BenchRateKey(QueueMessage, queue="bench_rate_key", rate_limit="1000000/s", rate_key="k"):
    __module__ = SCRATCH
    k: int


QUEUES = [BenchPlain, BenchConcurrency, BenchConcurrencyKey, BenchRate, BenchRateKey]


def claims(queue: type[QueueMessage], count: int) -> list[float]:
    """Seconds per ``lease(queue, BATCH)`` until ``count`` messages are leased."""
    times = []
    leased = 0
    while leased < count:
        started = time.perf_counter()
        items = lease(queue, BATCH)
        times.append(time.perf_counter() - started)
        assert items, f"{queue.queue_name()} ran dry"
        leased += len(items)
        mark_processed(items)
    return times


def main() -> None:
    call_command("migrate", verbosity=0)
    with connection.schema_editor() as editor:
        for queue in QUEUES:
            editor.create_model(queue.queue_model)
    try:
        for queue in QUEUES:
            enqueue_many([queue(k=i % 50) for i in range(N)])
        timings: dict[str, list[float]] = {q.queue_name(): [] for q in QUEUES}
        claims(BenchPlain, BATCH)  # warm the connection and the statement caches
        for _ in range(ROUNDS):
            for queue in QUEUES:
                timings[queue.queue_name()] += claims(queue, N // ROUNDS - BATCH)
        report(timings)
    finally:
        with connection.schema_editor() as editor:
            for queue in QUEUES:
                editor.delete_model(queue.queue_model)
        LimitedStart.objects.filter(queue__startswith="bench_").delete()


def report(timings: dict[str, list[float]]) -> None:
    base = statistics.median(timings["bench_plain"])
    print(f"{connection.vendor}, {N} messages a queue, lease(queue, {BATCH}), {ROUNDS} rounds, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'queue':<24}{'claims':>8}{'median us':>11}{'mean us':>9}{'x plain':>9}")
    for name, times in timings.items():
        median = statistics.median(times)
        print(f"{name:<24}{len(times):>8}{median * 1e6:>11.0f}{statistics.mean(times) * 1e6:>9.0f}"
              f"{median / base:>9.2f}")


if __name__ == "__main__":
    main()
