"""Overhead of QueueJob.time_limit: drain N no-op greetings with and without a limit, alternated, in one process on
one test database (``DATABASE_URL``): ``python tests/benchmarks/bench_time_limits.py 5000``."""

import os
import sys
import time
from datetime import timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

from nexus_queues import QueueJob, enqueue_many  # noqa: E402
from nexus_queues.testing import drain  # noqa: E402
from tests.benchmarks.databases import bench_databases  # noqa: E402
from tests.testapp.queues import Greeting  # noqa: E402


class Plain(QueueJob, abstract=True):
    message_class = Greeting

    def process(self, message: Greeting) -> None:
        return None


class Limited(Plain, abstract=True):
    time_limit = timedelta(seconds=30)


def main(count: int) -> None:
    with bench_databases():
        for job in (Plain, Limited, Plain, Limited):
            enqueue_many([Greeting(name=str(i)) for i in range(count)])
            started = time.perf_counter()
            drained = drain(job, max_runs=10**6)
            seconds = time.perf_counter() - started
            rate = drained.processed / seconds
            print(f"{job.__name__:8s} {drained.processed} msgs {seconds:.3f} s  {rate:,.0f} msg/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
