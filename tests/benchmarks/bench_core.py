"""nexus_queues' core on PostgreSQL, measured by the protocol of the anchor benchmarks.

Run through the anchors' harness so that raw SQL and the peers are measured beside it::

    EXTRA_BENCH=$PWD/tests/benchmarks/bench_core.py EXTRA_PY=$PWD/.venv/bin/python \\
        bash ../shared/bench/anchors/run_all.sh 1

  a_single_enqueue  ``enqueue(Ping(n=i))``, one call (= one autocommit statement) each, one client
  b_bulk_enqueue    ``enqueue_many`` of N_BULK prepared messages (one transaction, COPY)
  c_drain           N_PROCESS pre-loaded messages drained by WORKERS processes, each looping
                    ``lease(Ping, LEASE_BATCH)`` + ``mark_processed(items)`` until the queue is empty
  x_*_vs_raw        (only with ONLY=x) a and b alternated with bench_raw's own statements in
                    ROUNDS rounds, as a ratio: on a shared machine the load drifts between scripts
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.testapp
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings")

import django

django.setup()  # also in each spawned worker, which re-imports this module

import common as C  # noqa: E402  (the anchors' folder is on PYTHONPATH)
import psycopg  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from nexus_queues import enqueue, enqueue_many, lease, mark_processed  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

SYSTEM = "nexus_queues" + (" (server-side binding)" if os.environ.get("SERVER_SIDE_BINDING") == "1" else "")
TABLE = Ping.queue_model._meta.db_table
LEASE_BATCH = int(os.environ.get("LEASE_BATCH", 100))
ROUNDS = int(os.environ.get("ROUNDS", 5))


def record(metric: str, value: float, unit: str, **extra: object) -> None:
    """common.record, plus the 1-minute load average (other work shares this machine)."""
    C.record(SYSTEM, metric, value, unit, load1=round(os.getloadavg()[0], 2), **extra)


def reset() -> None:
    C.sql(f"TRUNCATE {TABLE}")


def stored() -> int:
    return C.sql(f"SELECT count(*) FROM {TABLE}")[0][0]


def worker(ready, go, idx: int, batch: int) -> None:
    """One worker process: connect, wait for GO, lease and complete batches until none is left."""
    connection.ensure_connection()
    ready.wait()
    go.wait()
    while items := lease(Ping, batch):
        for item in items:
            item.message  # what a handler receives: the typed, validated message  # noqa: B018
        mark_processed(items)


def single() -> None:
    reset()
    C.settle()
    connection.ensure_connection()
    t0 = time.perf_counter()
    for i in range(C.N_SINGLE):
        enqueue(Ping(n=i))
    record("a_single_enqueue", C.N_SINGLE / (time.perf_counter() - t0), "jobs/s")
    assert stored() == C.N_SINGLE


def bulk() -> None:
    reset()
    messages = [Ping(n=i) for i in range(C.N_BULK)]
    C.settle()
    t0 = time.perf_counter()
    enqueue_many(messages)
    record("b_bulk_enqueue", C.N_BULK / (time.perf_counter() - t0), "jobs/s", api="enqueue_many (COPY)")
    assert stored() == C.N_BULK


def drain() -> None:
    reset()
    enqueue_many(Ping(n=i) for i in range(C.N_PROCESS))
    connection.close()  # the workers are separate processes; keep no idle session here
    C.settle(TABLE)
    dt = C.run_workers(worker, (LEASE_BATCH,))
    left = stored()
    assert left == 0, f"{left} rows left"
    record("c_drain", C.N_PROCESS / dt, "rows/s", workers=C.WORKERS, lease_batch=LEASE_BATCH)


def interleaved() -> None:
    """Ratios to raw SQL measured turn about, so that both sides see the same load."""
    import bench_raw as R  # the anchors' raw-SQL script: its table, INSERT and COPY

    C.sql(R.DDL)
    block = max(C.N_SINGLE // ROUNDS, 1)
    ours, raw = 0.0, 0.0
    connection.ensure_connection()
    with psycopg.connect(C.DSN, autocommit=True) as conn:
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            for i in range(block):
                conn.execute(f"INSERT INTO {R.T} (payload) VALUES (%s)", (Jsonb({"i": i}),))
            raw += time.perf_counter() - t0
            t0 = time.perf_counter()
            for i in range(block):
                enqueue(Ping(n=i))
            ours += time.perf_counter() - t0
    record("x_a_vs_raw_insert", raw / ours * 100, "%", rounds=ROUNDS, per_round=block)
    messages = [Ping(n=i) for i in range(C.N_BULK)]
    ours, raw = 0.0, 0.0
    for _ in range(ROUNDS):
        C.sql(f"TRUNCATE {R.T}")
        reset()
        C.settle()
        t0 = time.perf_counter()
        R.copy_rows(C.N_BULK)
        raw += time.perf_counter() - t0
        C.settle()
        t0 = time.perf_counter()
        enqueue_many(messages)
        ours += time.perf_counter() - t0
    record("x_b_vs_raw_copy", raw / ours * 100, "%", rounds=ROUNDS, rows=C.N_BULK)


def main() -> None:
    call_command("migrate", verbosity=0)
    ph = C.phases()
    for phase, run in (("a", single), ("b", bulk), ("c", drain), ("x", interleaved)):
        if phase in ph:
            run()


if __name__ == "__main__":
    main()
