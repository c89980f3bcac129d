"""One burst worker in process over N preloaded Pings (PostgreSQL): wall, CPU and wait per message, per round.

    ANCHOR_DSN="host=127.0.0.1 port=5433 user=postgres dbname=anchor" PYTHONPATH=$ANCHORS \
        N=20000 ROUNDS=3 .venv/bin/python tests/benchmarks/profile_drain.py

The worker's CPU a message (``time.process_time``) apart from the time it waits for the server; start-up is not
counted. Runs of ``JOB_BATCH`` (default 100, as raw SQL's claim of 100), the objects set up frozen out of the
garbage collector as ``nexus_worker`` does, INFO logging to a file. ``PROFILE=1`` prints cProfile's top functions.
"""

import cProfile
import gc
import logging
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.testapp
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings")
os.environ.setdefault("NEXUS_TEST_BATCH", os.environ.get("JOB_BATCH", "100"))  # the Ping job's batch size

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from nexus_queues import enqueue_many  # noqa: E402
from nexus_queues.worker.loop import Worker  # noqa: E402
from tests.testapp.jobs import PingJob  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

N = int(os.environ.get("N", 20000))
ROUNDS = int(os.environ.get("ROUNDS", 3))
TABLE = Ping.queue_model._meta.db_table


def fill() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {TABLE}")
    enqueue_many(Ping(n=i) for i in range(N))
    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT")
        cursor.execute(f"VACUUM ANALYZE {TABLE}")


def main() -> None:
    call_command("migrate", verbosity=0)
    logging.basicConfig(level=logging.INFO, filename=os.path.join(tempfile.gettempdir(), "nexus_profile_drain.log"))
    gc.collect()
    gc.freeze()
    profile = cProfile.Profile() if os.environ.get("PROFILE") == "1" else None
    for round_ in range(1, ROUNDS + 1):
        fill()
        worker = Worker(job_classes=[PingJob], burst=True, listen=False)
        start, cpu = time.perf_counter(), time.process_time()
        if profile:
            profile.enable()
        worker.run()
        if profile:
            profile.disable()
        wall, used = time.perf_counter() - start, time.process_time() - cpu
        print(f"round {round_}: {N / wall:,.0f} messages/s; per message: wall {wall * 1e6 / N:.1f} µs, "
              f"CPU {used * 1e6 / N:.1f} µs, waiting {(wall - used) * 1e6 / N:.1f} µs")
    if profile:
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
