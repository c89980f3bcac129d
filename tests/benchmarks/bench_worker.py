"""nexus_queues' worker and dispatch loop on PostgreSQL, by the protocol of the anchor benchmarks.

Run through the anchors' harness so that raw SQL and the peers are measured beside it::

    EXTRA_BENCH=$PWD/tests/benchmarks/bench_worker.py EXTRA_PY=$PWD/.venv/bin/python \\
        bash ../shared/bench/anchors/run_all.sh 1

  c_drain           N_PROCESS pre-loaded no-op Ping messages drained by 1, 2 and 4 processes
                    (DRAIN_WORKERS), each a burst ``Worker`` running the Ping job (batch JOB_BATCH)
  d_idle_latency    enqueue -> job start on an idle worker (WORKERS processes, LISTEN/NOTIFY on),
                    N_LATENCY messages one at a time, a random 10-50 ms gap between them
  e_dispatch_late   N_DISPATCH messages each due at a random time 1 to 11 s ahead; one worker
                    process running the dispatch loop too (``--with-dispatch``); job start - due time
"""

import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.testapp
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings")
os.environ.setdefault("NEXUS_TEST_BATCH", os.environ.get("JOB_BATCH", "500"))  # the Ping job's batch size

import django

django.setup()  # also in each spawned worker, which re-imports this module

import common as C  # noqa: E402  (the anchors' folder is on PYTHONPATH)
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from nexus_queues import QueueJob, enqueue, enqueue_many  # noqa: E402
from nexus_queues.management.stopping import stop_on_signals  # noqa: E402
from nexus_queues.worker.dispatch import Dispatcher  # noqa: E402
from nexus_queues.worker.loop import Worker  # noqa: E402
from tests.testapp.jobs import PingJob  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

SYSTEM = "nexus_queues worker"
TABLE = Ping.queue_model._meta.db_table
DRAIN_WORKERS = [int(n) for n in os.environ.get("DRAIN_WORKERS", "1,2,4").split(",")]
N_DISPATCH = int(os.environ.get("N_DISPATCH", 300))


class StartJob(QueueJob, abstract=True):
    """Reports its start: a Ping's ``n`` carries the enqueue (or due) time in microseconds."""

    message_class = Ping
    batch_size = 100

    def process(self, message: Ping) -> None:
        C.job_started(message.n / 1e6)


def record(system: str, metric: str, value: float, unit: str, **extra: object) -> None:
    """common.record, plus the 1-minute load average (other work shares this machine)."""
    C.record(system, metric, value, unit, load1=round(os.getloadavg()[0], 2), **extra)


def stored() -> int:
    return C.sql(f"SELECT count(*) FROM {TABLE}")[0][0]


def drainer(ready, go, idx: int) -> None:
    """One burst worker process: connect, wait for GO, drain the Ping queue, exit."""
    worker = Worker(job_classes=[PingJob], burst=True, listen=False)
    connection.ensure_connection()
    ready.wait()
    go.wait()
    worker.run()


def listener(ready, go, idx: int, with_dispatch: bool) -> None:
    """One long-running worker process (LISTENing); SIGTERM stops it gracefully."""
    worker = Worker(job_classes=[StartJob], dispatcher=Dispatcher() if with_dispatch else None)
    stop_on_signals(worker.stop)
    connection.ensure_connection()
    ready.wait()
    go.wait()
    worker.run()


def drain(workers: int) -> None:
    C.sql(f"TRUNCATE {TABLE}")
    enqueue_many(Ping(n=i) for i in range(C.N_PROCESS))
    connection.close()  # the workers are separate processes; keep no idle session here
    C.settle(TABLE)
    dt = C.run_workers(drainer, (), n=workers)
    left = stored()
    assert left == 0, f"{left} rows left"
    record(f"{SYSTEM} ({workers} proc)", "c_drain", C.N_PROCESS / dt, "rows/s", workers=workers,
           job_batch=PingJob.batch_size)


def idle_latency() -> None:
    C.sql(f"TRUNCATE {TABLE}")
    C.reset_latency()
    procs = C.start_workers(listener, (False,))
    try:
        for k in range(C.N_LATENCY):
            enqueue(Ping(n=int(time.time() * 1e6)))
            C.wait_started(k + 1)
    finally:
        C.stop_workers(procs)
    C.record_latency(SYSTEM)


def dispatch_lateness() -> None:
    C.sql(f"TRUNCATE {TABLE}")
    C.reset_latency()
    procs = C.start_workers(listener, (True,), n=1)
    try:
        start = time.time()
        for _ in range(N_DISPATCH):
            due = start + random.uniform(1, 11)
            enqueue(Ping(n=int(due * 1e6)), at=datetime.fromtimestamp(due, UTC))
        C.wait_started(N_DISPATCH, gap=(0, 0), timeout=60)
    finally:
        C.stop_workers(procs)
    with open(C.LAT_FILE) as f:
        late = sorted(float(x) * 1000 for x in f if x.strip())
    p99 = late[int(0.99 * (len(late) - 1))]
    record(SYSTEM, "e_dispatch_lateness_p99", p99, "ms", p50_ms=round(statistics.median(late), 3),
           max_ms=round(late[-1], 3), earliest_ms=round(late[0], 3), n=len(late))


def main() -> None:
    call_command("migrate", verbosity=0)
    connection.close()
    ph = C.phases()
    if "c" in ph:
        for workers in DRAIN_WORKERS:
            drain(workers)
    if "d" in ph:
        idle_latency()
    if "e" in ph or "d" in ph:
        dispatch_lateness()


if __name__ == "__main__":
    main()
