"""Where the idle wake-up's time goes (PostgreSQL): nexus through ``nexus_worker`` beside raw SQL, step by step.

    ANCHOR_DSN="host=127.0.0.1 port=5433 user=postgres dbname=anchor" PYTHONPATH=$ANCHORS \
        WORKERS=2 N_LATENCY=100 .venv/bin/python tests/benchmarks/profile_wakeup.py

For each system, WORKERS idle workers (nexus: ``manage.py nexus_worker --queue pings`` in a process that stamps the
worker's steps; raw SQL: the anchors' LISTEN, claim one, mark done loop) and N_LATENCY messages enqueued one at a
time, 10 to 50 ms apart, as ``bench_worker.py``'s idle phase does. Every step is stamped with ``time.time()`` in the
process that takes it; the medians of each step's time:

  enqueue call     the enqueuing client's call, from its start to its return
  to the wake-up   from the enqueue's start to the worker's wait returning with the notification
  to the claim     from the wake-up to the claim being sent (nexus: the sweep, the run, the claim's parameters)
  claim            the claim's round trip (nexus: the cursor, the statement with the run's row, its commit, the rows)
  to the job       from the claim's rows to the job's first line (nexus: the leased items, the run's bookkeeping)
  total            the enqueue's start to the job's first line: ``d_idle_latency``

The stamps cost a few microseconds a step, on both sides alike.
"""

import os
import random
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.testapp
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings")

import django

django.setup()

import bench_raw  # noqa: E402  (the anchors' folder is on PYTHONPATH: raw SQL's table)
import common as C  # noqa: E402
import psycopg  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from nexus_queues import enqueue  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STAMPS = Path(tempfile.gettempdir()) / "nexus_profile_wakeup"
RAW = bench_raw.T
RAW_CLAIM = (f"UPDATE {RAW} SET status = 1 WHERE id = (SELECT id FROM {RAW} WHERE status = 0 ORDER BY id LIMIT 1 "
             "FOR UPDATE SKIP LOCKED) RETURNING id, payload")  # fmt: skip
STEPS = ("enqueue call", "to the wake-up", "to the claim", "claim", "to the job", "total")


def stamp(out, event: str, *words: object) -> None:
    out.write(" ".join([event, repr(time.time()), *map(str, words)]) + "\n")


def nexus_worker() -> None:
    """``nexus_worker --queue pings`` in this process, its wait, claim and job stamped."""
    from nexus_queues.backends.postgresql import PostgresBackend
    from nexus_queues.worker.wakeups import Wakeups
    from tests.testapp.jobs import PingJob

    out = (STAMPS / f"{os.getpid()}.txt").open("a", buffering=1)
    wait, claim, process = Wakeups.wait, PostgresBackend._claim_recording, PingJob.process

    def stamped_wait(self, timeout):
        woken = wait(self, timeout)
        if woken:
            stamp(out, "wake")
        return woken

    def stamped_claim(self, *args):
        stamp(out, "send")
        items = claim(self, *args)
        stamp(out, "claimed")
        return items

    def stamped_process(self, message):
        stamp(out, "job", message.n)
        return process(self, message)

    Wakeups.wait, PostgresBackend._claim_recording, PingJob.process = stamped_wait, stamped_claim, stamped_process
    call_command("nexus_worker", "--queue", "pings", verbosity=1)  # SIGTERM stops it


def raw_worker() -> None:
    """The anchors' raw-SQL listener, stamped at the same steps."""
    out = (STAMPS / f"{os.getpid()}.txt").open("a", buffering=1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with psycopg.connect(C.DSN, autocommit=True) as conn:
        conn.execute("LISTEN anchor_raw")
        while True:
            select.select([conn.fileno()], [], [], 5.0)
            stamp(out, "wake")
            for _ in conn.notifies(timeout=0):
                pass
            while True:
                stamp(out, "send")
                row = conn.execute(RAW_CLAIM).fetchone()
                stamp(out, "claimed")
                if row is None:
                    break
                stamp(out, "job", row[1]["n"])
                conn.execute(f"UPDATE {RAW} SET status = 2 WHERE id = %s", (row[0],))


def nexus_enqueue(n: int) -> None:
    enqueue(Ping(n=n))


def raw_enqueue(conn: psycopg.Connection) -> Callable[[int], None]:
    def send(n: int) -> None:
        with conn.transaction():
            conn.execute(f"INSERT INTO {RAW} (payload) VALUES (%s)", (Jsonb({"n": n}),))
            conn.execute("NOTIFY anchor_raw")

    return send


def measure(role: str, send: Callable[[int], None]) -> dict[str, float]:
    """Start the workers, enqueue N_LATENCY messages one at a time, stop them: each step's median, in ms."""
    for old in STAMPS.glob("*.txt"):
        old.unlink()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.path.dirname(C.__file__)])}
    log = (STAMPS / "workers.log").open("ab")
    workers = [subprocess.Popen([sys.executable, __file__, role], env=env, stdout=log, stderr=log)
               for _ in range(C.WORKERS)]  # fmt: skip
    try:
        time.sleep(5)  # Django set up, listening, idle
        calls = {}
        for _ in range(C.N_LATENCY):
            n = int(time.time() * 1e6)
            send(n)
            calls[n] = time.time()
            time.sleep(random.uniform(0.01, 0.05))
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(30)
    return _medians(calls)


def _medians(calls: dict[int, float]) -> dict[str, float]:
    """Each job's steps, read back from its worker's stamps: the wake-up, claim and job that started it."""
    steps: dict[str, list[float]] = {step: [] for step in STEPS}
    for path in STAMPS.glob("*.txt"):
        events = [line.split() for line in path.read_text().splitlines()]
        for i, (event, at, *words) in enumerate(events):
            if event != "job":
                continue
            claimed = next(j for j in range(i - 1, -1, -1) if events[j][0] == "claimed")
            sent = next(j for j in range(claimed - 1, -1, -1) if events[j][0] == "send")
            woke = next(j for j in range(sent - 1, -1, -1) if events[j][0] == "wake")
            woken, sent_at, claimed_at = (float(events[j][1]) for j in (woke, sent, claimed))
            enqueued, started = int(words[0]) / 1e6, float(at)
            seconds = (calls[int(words[0])] - enqueued, woken - enqueued, sent_at - woken, claimed_at - sent_at,
                       started - claimed_at, started - enqueued)  # fmt: skip
            for step, value in zip(STEPS, seconds, strict=True):
                steps[step].append(value)
    return {step: statistics.median(seconds) * 1000 for step, seconds in steps.items()}


def main() -> None:
    call_command("migrate", verbosity=0)
    STAMPS.mkdir(exist_ok=True)
    C.sql(bench_raw.DDL)
    C.sql(f"TRUNCATE {RAW}, {Ping.queue_model._meta.db_table}")
    connection.ensure_connection()
    with psycopg.connect(C.DSN, autocommit=True) as conn:
        figures = {"raw SQL": measure("raw", raw_enqueue(conn)), "nexus_worker": measure("nexus", nexus_enqueue)}
    print(f"{C.WORKERS} workers, {C.N_LATENCY} messages, medians in ms; load {os.getloadavg()[0]:.2f}")
    print(f"  {'step':16s}" + "".join(f"{system:>14s}" for system in figures))
    for step in STEPS:
        print(f"  {step:16s}" + "".join(f"{figures[system][step]:14.3f}" for system in figures))


if __name__ == "__main__":
    {"nexus": nexus_worker, "raw": raw_worker}.get(sys.argv[1] if len(sys.argv) > 1 else "", main)()
