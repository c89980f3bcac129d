"""The tasks framework on NexusBackend beside django-tasks-db's DatabaseBackend, same database, same run.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_c .venv/bin/python tests/benchmarks/bench_tasks.py

  enqueue    N_ENQUEUE ``noop.enqueue()`` calls, autocommit, one client: tasks/s
  drain      N_DRAIN queued no-op tasks run by 2 worker processes (``nexus_worker`` / ``db_worker``):
             tasks / (last finished_at - first started_at), read from the rows, so start-up is not counted
  latency    one idle worker per backend (nexus LISTENs; db_worker polls every DB_INTERVAL s, its default 1);
             N_LATENCY tasks enqueued one at a time, 10-50 ms apart: started_at - enqueued_at, median and p95
Enqueue and drain: the median of ROUNDS rounds (default 3), the two backends alternating.
NEXUS_TASKS_BATCH sets the nexus backend's ``batch_size`` option (default 1, one task per lease).
"""

import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.benchmarks.settings_tasks")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django_tasks_db.models import DBTaskResult  # noqa: E402

from nexus_queues.contrib.tasks.queues import task_queue  # noqa: E402
from tests.testapp.tasks import noop  # noqa: E402

N_ENQUEUE = int(os.environ.get("N_ENQUEUE", 2000))
N_DRAIN = int(os.environ.get("N_DRAIN", 5000))
N_LATENCY = int(os.environ.get("N_LATENCY", 100))
ROUNDS = int(os.environ.get("ROUNDS", 3))
DB_INTERVAL = os.environ.get("DB_INTERVAL", "1")
NEXUS = {"task": noop, "rows": lambda: task_queue("default").queue_items(),
         "worker": ["nexus_worker", "--queue", "tasks_default", "--peek-delay", "1"]}
DB = {"task": noop.using(backend="db"), "rows": lambda: DBTaskResult.objects.all(),
      "worker": ["db_worker", "--backend", "db", "--interval", DB_INTERVAL, "--no-startup-delay"]}


def empty() -> None:
    """Both tables empty, and vacuumed: without autovacuum, each round's dead rows would slow the next."""
    for system in (NEXUS, DB):
        rows = system["rows"]()
        rows.delete()
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(rows.model._meta.db_table)}")


def workers(system: dict, count: int, *extra: str) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "django", *system["worker"], *extra]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    return [subprocess.Popen(argv, env=env, cwd=ROOT, **quiet) for _ in range(count)]


def enqueue_rate(system: dict) -> float:
    task = system["task"]
    start = time.perf_counter()
    for _ in range(N_ENQUEUE):
        task.enqueue()
    return N_ENQUEUE / (time.perf_counter() - start)


def span(system: dict) -> float:
    """Seconds from the first task's start to the last one's finish."""
    times = system["rows"]().values_list("started_at", "finished_at")
    return (max(f for _, f in times) - min(s for s, _ in times)).total_seconds()


def drain_rate(system: dict, burst_flag: str) -> float:
    empty()
    for _ in range(N_DRAIN):
        system["task"].enqueue()
    for proc in workers(system, 2, burst_flag):
        proc.wait()
    assert system["rows"]().filter(finished_at__isnull=False).count() == N_DRAIN
    return N_DRAIN / span(system)


def latency(system: dict) -> tuple[float, float]:
    empty()
    [proc] = workers(system, 1)
    time.sleep(5)  # started and idle
    for _ in range(N_LATENCY):
        system["task"].enqueue()
        time.sleep(random.uniform(0.01, 0.05))
    deadline = time.monotonic() + 60
    while system["rows"]().filter(finished_at__isnull=False).count() < N_LATENCY and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    proc.wait()
    rows = system["rows"]()
    field = "created_at" if system is NEXUS else "enqueued_at"
    waits = sorted((s - e).total_seconds() * 1000 for e, s in rows.values_list(field, "started_at"))
    return statistics.median(waits), waits[int(len(waits) * 0.95) - 1]


def main() -> None:
    call_command("migrate", verbosity=0)
    empty()
    results: dict[str, dict] = {"nexus": {}, "django-tasks-db": {}}
    enqueues: dict[str, list[float]] = {"nexus": [], "django-tasks-db": []}
    drains: dict[str, list[float]] = {"nexus": [], "django-tasks-db": []}
    for _ in range(ROUNDS):  # alternated, so that a change in the machine's load falls on both
        for name, system in (("nexus", NEXUS), ("django-tasks-db", DB)):
            enqueues[name].append(enqueue_rate(system))
        drains["nexus"].append(drain_rate(NEXUS, "--burst"))
        drains["django-tasks-db"].append(drain_rate(DB, "--batch"))
    for name in results:
        results[name] = {"enqueue": statistics.median(enqueues[name]), "drain": statistics.median(drains[name])}
    for name, system in (("nexus", NEXUS), ("django-tasks-db", DB)):
        results[name]["latency"] = latency(system)
    empty()
    nexus, db = results["nexus"], results["django-tasks-db"]
    print(f"batch_size={os.environ.get('NEXUS_TASKS_BATCH', '1')} N_ENQUEUE={N_ENQUEUE} N_DRAIN={N_DRAIN} "
          f"N_LATENCY={N_LATENCY} ROUNDS={ROUNDS} (medians) load1={os.getloadavg()[0]:.2f}")
    for name, r in results.items():
        print(f"{name:16} enqueue {r['enqueue']:8.0f}/s  drain(2 workers) {r['drain']:8.0f}/s  "
              f"latency median {r['latency'][0]:7.1f} ms  p95 {r['latency'][1]:7.1f} ms")
    print(f"ratio nexus/db    enqueue {nexus['enqueue'] / db['enqueue']:.2f}x  "
          f"drain {nexus['drain'] / db['drain']:.2f}x  latency median {nexus['latency'][0] / db['latency'][0]:.3f}x")


if __name__ == "__main__":
    main()
