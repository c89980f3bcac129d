"""Schedules through the real ``manage.py nexus_worker`` (INFO logging on, as a user runs it).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_bench_sched N=50000 \\
        .venv/bin/python tests/benchmarks/bench_schedules.py

  drain        ``nexus_worker --burst --queue pings`` over N Pending pings (batches of 100): a job without a
               schedule, the path every queue takes (``ONLY=drain`` runs on an older checkout too, to compare);
               the command's start-up (the same command over an empty queue) is left out
  drain_scheduled  the same over N digests, whose job has a schedule: one drain from start-up until dry
  start_processing  an idle worker (LISTEN on PostgreSQL) on the scheduled digests: ``enqueue(...,
               start_processing=True)`` to the run's start, ROUNDS times one message; p50 and max
  tick_lateness  two workers, periodic Heartbeat every second (``NEXUS_TEST_TICK=1``) for SECONDS s: each
               tick's run start minus the tick; p50, p99 and max, and runs per tick (must be 1)

The settings are the tests' (``tests.settings``) on the database of DATABASE_URL (migrated here).
``ONLY=drain`` runs one measure. Prints one line per measure.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("NEXUS_TEST_BATCH", "100")  # the Ping job's batch, as the digests job's

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from nexus_queues import enqueue, enqueue_many  # noqa: E402
from nexus_queues.models import JobRun, QueueSettings  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402

N = int(os.environ.get("N", 50_000))
ROUNDS = int(os.environ.get("ROUNDS", 50))
SECONDS = int(os.environ.get("SECONDS", 30))
ONLY = os.environ.get("ONLY")


def manage(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args, "--settings", "tests.settings", "-v", "1"]


def line(name: str, value: str, note: str = "") -> None:
    print(f"{name:18} {value:>22}  {note}", flush=True)


def burst(queue: str, message_class: type, make: object, env: dict[str, str] | None = None) -> None:
    """One burst command over an empty queue (its start-up), then over N messages."""
    message_class.queue_items().all().delete()  # type: ignore[attr-defined]
    started = time.perf_counter()
    subprocess.run(manage("nexus_worker", "--burst", "--queue", queue), check=True,
                   capture_output=True, env=env)
    startup = time.perf_counter() - started
    enqueue_many(make(i) for i in range(N))  # type: ignore[operator]
    vacuum(message_class)
    started = time.perf_counter()
    subprocess.run(manage("nexus_worker", "--burst", "--queue", queue), check=True,
                   capture_output=True, env=env)
    elapsed = time.perf_counter() - started - startup
    left = message_class.queue_items().count()  # type: ignore[attr-defined]
    assert left == 0, f"{left} of {queue} were not processed"
    line(f"drain{'' if queue == 'pings' else '_scheduled'}", f"{N / elapsed:,.0f} msg/s",
         f"({N} messages in {elapsed:.2f} s, start-up {startup:.2f} s left out)")


def vacuum(message_class: type) -> None:
    """Clear the dead rows earlier runs left, as autovacuum would in a live system, so that they do not slow leases."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {message_class.queue_model._meta.db_table}")  # type: ignore[attr-defined]


def start_processing() -> None:
    from tests.testapp.queues import Digest

    Digest.queue_items().all().delete()
    JobRun.objects.filter(queue="digests").delete()
    enqueue(Digest(text="first"))  # the first worker of a never-run queue drains once at start-up
    worker = subprocess.Popen(manage("nexus_worker", "--no-periodic", "--queue", "digests"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: not Digest.queue_items().exists())
        time.sleep(1.5)  # past the drain: the worker is idle, waiting for its next tick
        latencies = []
        for n in range(ROUNDS):
            before = JobRun.objects.filter(queue="digests").count()
            enqueued_at = timezone.now()
            enqueue(Digest(text=f"now-{n}"), start_processing=True)
            _wait(lambda before=before: JobRun.objects.filter(queue="digests").count() > before)
            run = JobRun.objects.filter(queue="digests").order_by("-started_at").first()
            assert run is not None
            latencies.append((run.started_at - enqueued_at).total_seconds() * 1000)
            time.sleep(0.05)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    line("start_processing", f"p50 {statistics.median(latencies):.1f} ms",
         f"max {max(latencies):.1f} ms over {ROUNDS} one-message enqueues")


def tick_lateness() -> None:
    from tests.testapp.jobs import Heartbeat

    JobRun.objects.filter(job=Heartbeat.name()).delete()
    env = {**os.environ, "NEXUS_TEST_TICK": "1"}
    workers = [subprocess.Popen(manage("nexus_worker", "--queue", "pings"), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        time.sleep(SECONDS)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(30)
    runs = list(JobRun.objects.filter(job=Heartbeat.name()).values_list("tick", "started_at"))
    late = sorted((started - tick).total_seconds() * 1000 for tick, started in runs)
    per_tick = Counter(tick for tick, _ in runs)
    assert runs and max(per_tick.values()) == 1, f"a tick ran more than once: {per_tick.most_common(1)}"
    line("tick_lateness", f"p50 {statistics.median(late):.1f} ms",
         f"p99 {late[int(len(late) * 0.99)]:.1f} ms, max {late[-1]:.1f} ms; {len(runs)} ticks, one run each")


def _wait(condition: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def main() -> None:
    call_command("migrate", verbosity=0)
    QueueSettings.objects.all().delete()
    if ONLY in (None, "drain"):
        burst("pings", Ping, lambda i: Ping(n=i))
    if ONLY in (None, "drain_scheduled"):
        from tests.testapp.queues import Digest

        JobRun.objects.filter(queue="digests").delete()  # never run: the burst drains it at start-up
        burst("digests", Digest, lambda i: Digest(text=f"d{i}"))
    if ONLY in (None, "start_processing"):
        start_processing()
    if ONLY in (None, "tick_lateness"):
        tick_lateness()


if __name__ == "__main__":
    main()
