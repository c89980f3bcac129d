"""nexus_queues through PgBouncer (transaction pooling) beside a direct connection, in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench python tests/benchmarks/bench_pgbouncer.py

It starts its own PgBouncer (``tests/pgbouncer.py``) in front of ``DATABASE_URL``'s server, migrates that
database, then, ROUNDS times, for each route in turn (``direct``; ``direct-unprepared``, PREPARED_STATEMENTS off;
``pgbouncer``, set as the "Behind PgBouncer" guide says), in a fresh process:

  enqueue        N_SINGLE ``enqueue(Ping(n=i))`` calls, autocommit, one client (messages/s)
  enqueue_many   one ``enqueue_many`` of N_BULK Pings (COPY; messages/s)
  drain          N_DRAIN Pings pre-loaded (untimed), then ``manage.py nexus_worker --burst --queue pings`` (job
                 batch JOB_BATCH) drains them: messages/s from the worker's "Worker started" line to its exit
                 (``drain_wall``: from the command's start, Django's start-up included)

Printed: the median of each route and figure, and the 1-minute load average (other work may share the machine).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import pgbouncer  # noqa: E402

SETTINGS = "tests.benchmarks.settings_pgbouncer"
ROUTES = ("direct", "direct-unprepared", "pgbouncer")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
N_SINGLE = int(os.environ.get("N_SINGLE", "2000"))
N_BULK = int(os.environ.get("N_BULK", "50000"))
N_DRAIN = int(os.environ.get("N_DRAIN", "20000"))
JOB_BATCH = os.environ.get("JOB_BATCH", "500")

CHILD = """
import json, sys, time
import django
django.setup()
from django.db import connection
from nexus_queues import enqueue, enqueue_many
from tests.testapp.more_queues import Ping
table = connection.ops.quote_name(Ping.queue_model._meta.db_table)
def empty():
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")
n_single, n_bulk, n_drain = map(int, sys.argv[1:4])
empty()
start = time.perf_counter()
for i in range(n_single):
    enqueue(Ping(n=i))
single = n_single / (time.perf_counter() - start)
empty()
bulk_messages = [Ping(n=i) for i in range(n_bulk)]
start = time.perf_counter()
enqueue_many(bulk_messages)
bulk = n_bulk / (time.perf_counter() - start)
empty()
enqueue_many([Ping(n=i) for i in range(n_drain)])
print(json.dumps({"enqueue": single, "enqueue_many": bulk}))
"""


def environment(route: str, bouncer: pgbouncer.Bouncer) -> dict[str, str]:
    """The environment of a process on ``route``."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "PYTHONPATH": str(ROOT), "NEXUS_TEST_BATCH": JOB_BATCH}
    env.pop("NEXUS_BENCH_PGBOUNCER_PORT", None)
    if route == "pgbouncer":
        env["NEXUS_BENCH_PGBOUNCER_PORT"] = str(bouncer.port)
    env["PREPARED_STATEMENTS"] = "0" if route == "direct-unprepared" else "1"
    return env


def measure(route: str, bouncer: pgbouncer.Bouncer) -> dict[str, float]:
    """One round's figures on ``route``."""
    env = environment(route, bouncer)
    done = subprocess.run([sys.executable, "-c", CHILD, str(N_SINGLE), str(N_BULK), str(N_DRAIN)], env=env,
                          cwd=ROOT, capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout)
    started = time.time()
    worker = subprocess.run([sys.executable, "-m", "django", "nexus_worker", "--burst", "--queue", "pings"], env=env,
                            cwd=ROOT, capture_output=True, text=True, check=True)
    ended = time.time()
    line = next(line for line in worker.stderr.splitlines() if "Worker started" in line)
    begun = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    figures["drain"] = N_DRAIN / (ended - begun)
    figures["drain_wall"] = N_DRAIN / (ended - started)
    return figures


def main() -> None:
    """Start PgBouncer, migrate, measure every route ROUNDS times, print the medians."""
    import environ

    server = environ.Env().db("DATABASE_URL")
    bouncer = pgbouncer.start(server)
    try:
        subprocess.run([sys.executable, "-m", "django", "migrate", "-v", "0"], env=environment("direct", bouncer),
                       cwd=ROOT, check=True)
        results: dict[str, list[dict[str, float]]] = {route: [] for route in ROUTES}
        for _ in range(ROUNDS):
            for route in ROUTES:
                results[route].append(measure(route, bouncer))
    finally:
        pgbouncer.stop(bouncer)
    print(f"N_SINGLE={N_SINGLE} N_BULK={N_BULK} N_DRAIN={N_DRAIN} JOB_BATCH={JOB_BATCH} ROUNDS={ROUNDS} "
          f"load1={os.getloadavg()[0]:.2f} (messages/s, median of the rounds)")
    print(f"{'route':<20}" + "".join(f"{name:>14}" for name in results[ROUTES[0]][0]))
    for route, rounds in results.items():
        print(f"{route:<20}" + "".join(f"{statistics.median(r[name] for r in rounds):>14,.0f}" for name in rounds[0]))


if __name__ == "__main__":
    main()
