"""A woken ``nexus_worker``'s Python, step by step, from its wait's return to its job's first line (PostgreSQL).

    ANCHOR_DSN="host=127.0.0.1 port=5433 user=postgres dbname=anchor" PYTHONPATH=$ANCHORS \
        N_LATENCY=200 .venv/bin/python tests/benchmarks/profile_wakeup_steps.py

One idle ``nexus_worker --queue pings`` (in a process that stamps the functions below with
``time.perf_counter_ns``) and N_LATENCY messages enqueued one at a time, 10 to 50 ms apart, as
``profile_wakeup.py`` does; for each step, the median time from one stamp to the next over the wake-ups
that started a job. Each step is several times its cost in a hot loop: the worker slept before it.

  wait         the wait's return (the notification read)         sweep      ``Worker.sweep``
  drain        ``Worker._drain``                                  run        ``runs._lease`` (the run's row made)
  lease        ``leasing.lease`` (the claim made)                  claim      the backend's claim (send stamp)
  parameters   the claim's parameters (the run's values)          cursor     the cursor asked for
  send         the statement handed to psycopg                    return     psycopg's return (the round trip)
  items        the leased items made                              job        ``PingJob.process``
"""

import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.testapp
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings")

import django

django.setup()

import common as C  # noqa: E402  (the anchors' folder is on PYTHONPATH)
from django.core.management import call_command  # noqa: E402

from nexus_queues import enqueue  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

STAMPS = Path(tempfile.gettempdir()) / "nexus_profile_wakeup_steps.txt"


def worker() -> None:
    """``nexus_worker --queue pings`` in this process, its steps stamped; the stamps written when it stops."""
    from nexus_queues.backends import cursors
    from nexus_queues.backends.postgresql import PostgresBackend
    from nexus_queues.worker import loop, runs
    from nexus_queues.worker.wakeups import Wakeups
    from tests.testapp.jobs import PingJob

    stamps: list[tuple[str, int]] = []

    def stamp(owner: Any, name: str, before: str, after: str | None = None) -> None:
        function = getattr(owner, name)

        def stamped(*args: Any, **kwargs: Any) -> Any:
            stamps.append((before, time.perf_counter_ns()))
            result = function(*args, **kwargs)
            if after is not None and (before != "wait" or result):  # a wait that timed out woke nothing
                stamps.append((after, time.perf_counter_ns()))
            return result

        setattr(owner, name, stamped)

    stamp(Wakeups, "wait", "waiting", "wait")
    stamp(loop.Worker, "sweep", "sweep")
    stamp(loop.Worker, "_drain", "drain")
    stamp(runs, "_lease", "run")
    stamp(runs, "lease", "lease")
    stamp(PostgresBackend, "_claim_recording", "claim")
    stamp(PostgresBackend, "_claiming", "parameters")
    stamp(PostgresBackend, "cursor", "cursor")
    stamp(cursors._cursor_class(True), "execute", "send", "return")
    stamp(PostgresBackend, "_recorded", "items")
    stamp(PingJob, "process", "job")
    try:
        call_command("nexus_worker", "--queue", "pings", verbosity=0)  # SIGTERM stops it
    finally:
        STAMPS.write_text("".join(f"{step} {at}\n" for step, at in stamps))


def medians() -> dict[str, float]:
    """Each step's median in µs, over the wake-ups (from a ``wait`` stamp) that reached a job."""
    steps: dict[str, list[float]] = {}
    wakeup: list[tuple[str, int]] = []
    for line in STAMPS.read_text().splitlines():
        step, at = line.split()
        if step == "wait":
            wakeup = [(step, int(at))]
        elif wakeup:
            wakeup.append((step, int(at)))
            if step == "job":
                for (before, started), (after, ended) in pairwise(wakeup):
                    steps.setdefault(f"{before} -> {after}", []).append((ended - started) / 1000)
                wakeup = []
    return {step: statistics.median(times) for step, times in steps.items()}


def main() -> None:
    call_command("migrate", verbosity=0)
    C.sql(f"TRUNCATE {Ping.queue_model._meta.db_table}, nexus_job_run")
    C.sql(f"VACUUM ANALYZE {Ping.queue_model._meta.db_table}")
    process = subprocess.Popen([sys.executable, __file__, "worker"])
    try:
        time.sleep(5)  # Django set up, listening, idle
        for n in range(C.N_LATENCY):
            enqueue(Ping(n=n))
            time.sleep(random.uniform(0.01, 0.05))
        time.sleep(0.5)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    figures = medians()
    print(f"{C.N_LATENCY} messages, one worker, medians in µs; load {os.getloadavg()[0]:.2f}")
    for step, median in figures.items():
        print(f"  {step:24s} {median:8.1f}")
    print(f"  {'in all':24s} {sum(figures.values()):8.1f}")


if __name__ == "__main__":
    worker() if sys.argv[1:] == ["worker"] else main()
