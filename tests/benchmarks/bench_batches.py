"""What a batch costs on the hot paths, on PostgreSQL: ``enqueue_many`` and a worker's lease + acknowledgement, each
timed with its messages in a batch and without, alternating, in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_batches_bench \\
        .venv/bin/python tests/benchmarks/bench_batches.py [MESSAGES]

Creates (and afterwards drops, unless KEEPDB=1) the test database ``test_<name>``. ``enqueue_many`` of MESSAGES
pings (COPY) REPEAT times each way; then MESSAGES pings run by the worker's own runs (``drain``: a lease of 100 with
its job run, the no-op job, the acknowledgement with its counts in one transaction), each way, printing the medians
and the cost per message.
"""

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.db import connection  # noqa: E402

from nexus_queues import enqueue_many  # noqa: E402
from nexus_queues.testing import drain  # noqa: E402
from tests.benchmarks.bench_admin import bench_database  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

MESSAGES = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
REPEAT = int(os.environ.get("REPEAT", 5))


def enqueued(batch: str | None) -> Callable[[], None]:
    def run() -> None:
        enqueue_many([Ping(n=n) for n in range(MESSAGES)], batch=batch)

    return run


def acknowledged(batch: str | None) -> Callable[[], None]:
    """Every ping run by the worker's runs, 100 at a time (the table refilled first, untimed)."""

    def run() -> None:
        drain(Ping, max_runs=MESSAGES)

    def refill() -> None:
        Ping.queue_model.objects.all().delete()
        enqueue_many([Ping(n=n) for n in range(MESSAGES)], batch=batch)
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {Ping.queue_model._meta.db_table}")

    run.refill = refill  # type: ignore[attr-defined]
    return run


def median_ms(runs: dict[str, Callable[[], None]]) -> dict[str, float]:
    """Each run REPEAT times, alternating so that drift hits both alike; the median milliseconds of each."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(REPEAT):
        for name, run in runs.items():
            getattr(run, "refill", lambda: None)()
            started = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - started) * 1000)
            Ping.queue_model.objects.all().delete()
    return {name: statistics.median(found) for name, found in times.items()}


def report(what: str, found: dict[str, float]) -> None:
    plain, batched = found["plain"], found["batch"]
    print(f"{what}: {plain:.0f} ms without a batch, {batched:.0f} ms in one ({(batched - plain) / plain:+.1%}); "
          f"{plain * 1000 / MESSAGES:.1f} and {batched * 1000 / MESSAGES:.1f} us a message")


def main() -> None:
    with bench_database("bench_batches.py"):
        print(f"{MESSAGES} pings, {REPEAT} runs each, medians")
        report("enqueue_many", median_ms({"plain": enqueued(None), "batch": enqueued("bench")}))
        report("worker runs of 100", median_ms({"plain": acknowledged(None), "batch": acknowledged("b")}))


if __name__ == "__main__":
    main()
