"""cProfile of N batch-1 task runs in process, one worker, no pool: wall and CPU per task, the top functions.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_c N=200 .venv/bin/python tests/benchmarks/profile_tasks.py
"""

import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings_tasks")

import django

django.setup()

from django.core.management import call_command  # noqa: E402

from nexus_queues.contrib.tasks.queues import task_queue  # noqa: E402
from nexus_queues.contrib.tasks.running import TaskJob  # noqa: E402
from nexus_queues.worker.lease_renewal import LeaseRenewal  # noqa: E402
from nexus_queues.worker.runs import run_once  # noqa: E402
from tests.testapp.tasks import noop  # noqa: E402

N = int(os.environ.get("N", 300))


def main() -> None:
    call_command("migrate", verbosity=0)
    message_class = task_queue("default")
    job = next(job for job in TaskJob.__subclasses__() if job.message_class is message_class)
    message_class.queue_items().delete()
    for _ in range(N):
        noop.enqueue()
    renewal, profile = LeaseRenewal(), cProfile.Profile()
    start, cpu = time.perf_counter(), time.process_time()
    profile.enable()
    while run_once(job, renewal):
        pass
    profile.disable()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"{N} runs: {wall / N * 1e3:.2f} ms wall, {cpu / N * 1e3:.2f} ms CPU per task")
    pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
