"""Many workers through the real ``manage.py nexus_worker``: drains by 1 to 8 processes or threads, idle wake-ups.

    DATABASE_URL=postgres://postgres@127.0.0.1:5441/nq_workers N=50000 \\
        .venv/bin/python tests/benchmarks/bench_workers.py

  processes  K = PROCESSES ``nexus_worker --queue pings`` processes started and idle, then N pings (batches of
             BATCH) enqueued in one transaction: messages / (the last run's end - the commit), from the job runs' rows
  threads    the same with one process and ``--concurrency`` T = THREADS
  burst      (``ONLY=burst`` only) K ``nexus_worker --burst`` processes started together over N Pending pings:
             N / the wall time from the spawn to the last exit, start-ups included
  idle       K = PROCESSES idle ``nexus_worker --queue pings`` (LISTEN on PostgreSQL), then one process with the
             most THREADS; ROUNDS messages enqueued one at a time, 10 to 50 ms apart: enqueue to the job's start,
             p50 and p95; how many processes won a message; the database sessions; and, when the server preloads
             ``pg_stat_statements``, the claims per message, those that came back empty (the thundering herd), and
             the peeks

The settings are the tests' (``tests.settings``) on the database of DATABASE_URL (migrated here). ``ONLY=idle``
runs one measure; PROCESSES=1,2,4,8 and THREADS=1,2,4,8 set the counts. Prints one line per measure, with the load
average. On SQLite, one writer at a time: the drains show what that means; the idle phase needs PostgreSQL.
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("NEXUS_TEST_BATCH", os.environ.get("BATCH", "100"))  # the Ping job's batch size

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Max, Min  # noqa: E402
from django.utils import timezone  # noqa: E402

from nexus_queues import enqueue, enqueue_many  # noqa: E402
from nexus_queues.models import JobRun, QueueSettings, WorkerProcess  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

N = int(os.environ.get("N", 50_000))
ROUNDS = int(os.environ.get("ROUNDS", 100))
PROCESSES = [int(k) for k in os.environ.get("PROCESSES", "1,2,4,8").split(",")]
THREADS = [int(t) for t in os.environ.get("THREADS", "1,2,4,8").split(",")]
ONLY = os.environ.get("ONLY")
TABLE = Ping.queue_model._meta.db_table


LOGS = Path(tempfile.mkdtemp(prefix="nq_bench_workers_"))
"""Each worker's log (a pipe nobody reads while it runs would fill, and block the worker)."""


def _log() -> IO[str]:
    return tempfile.NamedTemporaryFile("w", dir=LOGS, suffix=".log", delete=False)


def manage(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args, "--settings", "tests.settings", "-v", "1"]


def line(name: str, value: str, note: str = "") -> None:
    load = os.getloadavg()[0]
    print(f"{name:22} {value:>16}  {note} (load {load:.2f})", flush=True)


def fill(count: int) -> None:
    """``count`` Pending pings and no job runs, the dead rows of earlier rounds vacuumed away."""
    Ping.queue_items().all().delete()
    JobRun.objects.filter(queue="pings").delete()
    WorkerProcess.objects.all().delete()
    enqueue_many(Ping(n=i) for i in range(count))
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {TABLE}")
    connection.close()  # keep no session of ours open beside the workers


def drain(name: str, processes: int, *extra: str) -> None:
    """K workers started and idle first (so that their start-ups do not share the drain's cores), then N
    messages enqueued in one transaction: messages / (the last run's end - the commit)."""
    fill(0)
    workers = [
        subprocess.Popen(
            manage("nexus_worker", "--queue", "pings", "--no-periodic", *extra),
            stdout=subprocess.DEVNULL,
            stderr=_log(),
        )
        for _ in range(processes)
    ]
    try:
        _wait(lambda: WorkerProcess.objects.filter(stopped_at__isnull=True).count() >= processes, timeout=300)
        time.sleep(1.5)  # past each worker's first peek
        enqueue_many(Ping(n=i) for i in range(N))
        committed = timezone.now()
        _wait(lambda: not Ping.queue_items().exists(), timeout=600, pause=0.05)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            assert worker.wait(60) == 0, f"a worker failed: see {LOGS}"
    runs = JobRun.objects.filter(queue="pings")
    seconds = (runs.aggregate(last=Max("finished_at"))["last"] - committed).total_seconds()
    winners = runs.values("worker").distinct().count()
    line(
        name,
        f"{N / seconds:,.0f} msg/s",
        f"{N} in {seconds:.2f} s from the commit to the last run's end; {runs.count()} runs by {winners} process(es)",
    )


def burst(processes: int) -> None:
    """K ``--burst`` processes over N Pending messages, their start-ups included: wall time to the last exit."""
    fill(N)
    started = time.perf_counter()
    workers = [
        subprocess.Popen(
            manage("nexus_worker", "--burst", "--queue", "pings"),
            stdout=subprocess.DEVNULL,
            stderr=_log(),
        )
        for _ in range(processes)
    ]
    for worker in workers:
        assert worker.wait(600) == 0, f"a worker failed: see {LOGS}"
    wall = time.perf_counter() - started
    assert not Ping.queue_items().exists(), "pings were left"
    runs = JobRun.objects.filter(queue="pings")
    span = runs.aggregate(first=Min("started_at"), last=Max("finished_at"))
    seconds = (span["last"] - span["first"]).total_seconds()
    line(
        f"burst, {processes} process(es)",
        f"{N / wall:,.0f} msg/s",
        f"wall {wall:.2f} s from the spawn to the last exit; {seconds:.2f} s from the first run to the last",
    )


def idle(processes: int, *extra: str) -> None:
    fill(0)
    out = Path(tempfile.mkdtemp(prefix="nq_bench_workers_")) / "report"
    env = {**os.environ, "NEXUS_TEST_OUT": str(out), "NEXUS_TEST_PING_STARTS": "1"}
    workers = [
        subprocess.Popen(
            manage("nexus_worker", "--queue", "pings", "--no-periodic", *extra),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(processes)
    ]
    try:
        _wait(lambda: _listening() >= processes, timeout=120)
        time.sleep(1.5)  # past each worker's first peek
        sessions = _sessions()
        statements = _StatementCounts()
        enqueued: dict[int, float] = {}
        for n in range(ROUNDS):
            enqueued[n] = time.time()
            enqueue(Ping(n=n))
            _wait(lambda n=n: _started(out) > n)
            time.sleep(random.uniform(0.01, 0.05))
        claims, peeks = statements.since()
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(30)
    starts = [line.split() for line in out.read_text().splitlines() if line.startswith("ping-started ")]
    latency = sorted((float(at) - enqueued[int(n)]) * 1000 for _, n, at, *_ in starts)
    winners = len({pid for *_, pid, _cid in starts})
    herd = (
        "claims not counted (no pg_stat_statements)"
        if claims is None
        else (f"{claims / ROUNDS:.2f} claims a message, {claims - ROUNDS} empty; {peeks} peeks")
    )
    line(
        f"idle, {processes} process(es){' x ' + extra[-1] if extra else ''}",
        f"p50 {statistics.median(latency):.2f} ms",
        f"p95 {latency[int(0.95 * (len(latency) - 1))]:.2f} ms, max {latency[-1]:.2f} ms over {ROUNDS} messages; "
        f"{winners} process(es) won one; {herd}; {sessions} database sessions",
    )


def _listening() -> int:
    """Sessions of this database LISTENing (a worker's listener's last statement is its LISTEN)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
        )
        return cursor.fetchone()[0]


def _sessions() -> int:
    """Sessions of this database but ours."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


def _started(out: Path) -> int:
    if not out.exists():
        return 0
    return out.read_text().count("ping-started ")


class _StatementCounts:
    """Calls of the claim and the peek on the pings' table since construction, from ``pg_stat_statements``."""

    def __init__(self) -> None:
        self.before = self._calls() or (0, 0)

    def since(self) -> tuple[int | None, int | None]:
        now = self._calls()
        if now is None:
            return None, None
        return now[0] - self.before[0], now[1] - self.before[1]

    def _calls(self) -> tuple[int, int] | None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                cursor.execute(
                    "SELECT coalesce(sum(calls) FILTER (WHERE query LIKE '%%SKIP LOCKED%%'), 0),"
                    " coalesce(sum(calls) FILTER (WHERE query LIKE 'SELECT COUNT(*) FROM (SELECT%%'), 0)"
                    " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname ="
                    " current_database()) AND query LIKE %s",
                    [f"%{TABLE}%"],
                )
                claims, peeks = cursor.fetchone()
        except Exception:  # the extension is not preloaded on this server
            connection.close()
            return None
        return int(claims), int(peeks)


def _wait(condition: Callable[[], bool], timeout: float = 30, pause: float = 0.002) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(pause)


def main() -> None:
    call_command("migrate", verbosity=0)
    QueueSettings.objects.all().delete()
    print(f"{connection.vendor}, N={N}, batch {os.environ['NEXUS_TEST_BATCH']}, {os.cpu_count()} cores", flush=True)
    if ONLY in (None, "processes"):
        for k in PROCESSES:
            drain(f"drain, {k} process(es)", k)
    if ONLY in (None, "threads"):
        for t in THREADS:
            drain(f"drain, 1 process x {t}", 1, "--concurrency", str(t))
    if ONLY in (None, "idle"):
        for k in PROCESSES:
            idle(k)
        idle(1, "--concurrency", str(max(THREADS)))  # threads share their process's listener
    if ONLY == "burst":
        for k in PROCESSES:
            burst(k)


if __name__ == "__main__":
    main()
