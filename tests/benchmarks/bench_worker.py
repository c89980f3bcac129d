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

Through the command a user runs (``manage.py nexus_worker``, INFO logging on, written to a file):
  c_drain (command) N_PROCESS pre-loaded Pings drained by WORKERS ``nexus_worker --burst --queue pings`` processes
                    (batch CMD_BATCH, default 100, as raw SQL's claim of 100). GO, as the anchors': the processes
                    start while the bench holds the queue table locked; once each waits on that lock (started,
                    connected, at their first peek) the bench commits, and the time runs to the last exit.
  d_idle (command)  as d_idle_latency, on WORKERS idle ``nexus_worker --queue pings`` processes
``ONLY=C`` / ``ONLY=D`` run the command's drain / idle latency alone; ``c`` and ``d`` run them too.
"""

import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.testapp
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings")
os.environ.setdefault("NEXUS_TEST_BATCH", os.environ.get("JOB_BATCH", "500"))  # the Ping job's batch size

import django

django.setup()  # also in each spawned worker, which re-imports this module

import common as C  # noqa: E402  (the anchors' folder is on PYTHONPATH)
import psycopg  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from nexus_queues import QueueJob, enqueue, enqueue_many  # noqa: E402
from nexus_queues.management.stopping import stop_on_signals  # noqa: E402
from nexus_queues.worker.dispatch import Dispatcher  # noqa: E402
from nexus_queues.worker.loop import Worker  # noqa: E402
from tests.testapp.jobs import PingJob  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

SYSTEM = "nexus_queues worker"
COMMAND = "nexus_queues nexus_worker"
ROOT = Path(__file__).resolve().parents[2]
CMD_BATCH = os.environ.get("CMD_BATCH", "100")
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


def commands(*args: str, env: dict[str, str] | None = None) -> list[subprocess.Popen[bytes]]:
    """WORKERS ``manage.py nexus_worker`` processes with INFO logging, appended to a file as a deployment keeps it."""
    anchors = os.path.dirname(C.__file__)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{anchors}", "NEXUS_TEST_BATCH": CMD_BATCH, **(env or {})}
    argv = [sys.executable, str(ROOT / "manage.py"), "nexus_worker", "--queue", "pings", *args,
            "--settings", "tests.benchmarks.settings", "-v", "1"]
    log = open(os.path.join(tempfile.gettempdir(), f"nexus_bench_worker_{os.getpid()}.log"), "ab")
    return [subprocess.Popen(argv, env=env, stdout=log, stderr=log) for _ in range(C.WORKERS)]


def waiting_on(conn: psycopg.Connection, table: str) -> int:
    """How many sessions wait for a lock on ``table``."""
    row = conn.execute("SELECT count(*) FROM pg_locks WHERE relation = %s::regclass AND NOT granted", [table])
    return int(row.fetchone()[0])


def command_drain() -> None:
    C.sql(f"TRUNCATE {TABLE}")
    enqueue_many(Ping(n=i) for i in range(C.N_PROCESS))
    connection.close()
    C.settle(TABLE)
    with psycopg.connect(C.DSN) as lock, psycopg.connect(C.DSN, autocommit=True) as watch:
        lock.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        procs = commands("--burst")
        deadline = time.monotonic() + 120
        while waiting_on(watch, TABLE) < len(procs):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a worker did not start"
            time.sleep(0.01)
        t0 = time.perf_counter()
        lock.commit()
        codes = [p.wait(900) for p in procs]
        dt = time.perf_counter() - t0
    assert codes == [0] * len(procs), f"worker exit codes {codes}"
    left = stored()
    assert left == 0, f"{left} rows left"
    record(f"{COMMAND} --burst ({len(procs)} proc)", "c_drain", C.N_PROCESS / dt, "rows/s", workers=len(procs),
           job_batch=int(CMD_BATCH))


def command_idle_latency() -> None:
    C.sql(f"TRUNCATE {TABLE}")
    C.reset_latency()
    procs = commands(env={"NEXUS_TEST_PING_STARTED": C.LAT_FILE})
    try:
        with psycopg.connect(C.DSN, autocommit=True) as watch:
            deadline = time.monotonic() + 120
            listening = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'"
            while watch.execute(listening).fetchone()[0] < len(procs):
                assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a worker did not start"
                time.sleep(0.05)
        time.sleep(1.0)  # as the anchors' start_workers: let them reach their idle wait
        for k in range(C.N_LATENCY):
            enqueue(Ping(n=int(time.time() * 1e6)))
            C.wait_started(k + 1)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(30)
    C.record_latency(COMMAND)


def main() -> None:
    call_command("migrate", verbosity=0)
    connection.close()
    ph = C.phases()
    if "c" in ph:
        for workers in DRAIN_WORKERS:
            drain(workers)
    if "c" in ph or "C" in ph:
        command_drain()
    if "d" in ph or "D" in ph:
        command_idle_latency()
    if "d" in ph:
        idle_latency()
    if "e" in ph or "d" in ph:
        dispatch_lateness()


if __name__ == "__main__":
    main()
