"""The metrics page on a big queue: 1,000,000 greetings and a day of per-minute throughput rows on PostgreSQL,
scrapes timed through the test client.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_metrics_bench \\
        .venv/bin/python tests/benchmarks/bench_metrics.py [ROWS]

Creates (and afterwards drops, unless KEEPDB=1) the test database ``test_<name>``, fills the greetings queue with
``enqueue_many`` (COPY) in batches and leaves 60% of it Processed, 1,000 rows Error and 1,000 OnHold (the rest
Pending); gives every queue a day of per-minute throughput rows and an all-time row, and the live workers 20 live
and 1,000 stopped processes; runs VACUUM ANALYZE as autovacuum would. Then scrapes ``/nexus/metrics/`` with an API
token REPEAT times (after one warm-up) for each METRICS_COUNT_LIMIT in LIMITS, printing the median, the 95th
percentile and the worst in milliseconds, and the SQL queries of one scrape.
"""

import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, override_settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from nexus_queues import enqueue_many  # noqa: E402
from nexus_queues.api_tokens import make_token  # noqa: E402
from nexus_queues.processes import WorkerProcess, WorkerProcessQueue  # noqa: E402
from nexus_queues.registry import registry  # noqa: E402
from nexus_queues.throughput import ALL_TIME, MINUTES_KEPT, QueueMinute, minute_of  # noqa: E402
from tests.benchmarks.bench_admin import bench_database  # noqa: E402
from tests.testapp.queues import Greeting  # noqa: E402

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
BATCH = 100_000
REPEAT = int(os.environ.get("REPEAT", 50))
LIMITS = [int(n) for n in os.environ.get("LIMITS", "100000,10000").split(",")]


def fill(rows: int) -> float:
    started = time.perf_counter()
    for start in range(0, rows, BATCH):
        enqueue_many([Greeting(name=f"person-{n}", times=n % 7) for n in range(start, min(rows, start + BATCH))])
    first = Greeting.queue_model.objects.order_by("id").values_list("id", flat=True).first()
    processed = first + rows * 6 // 10
    Greeting.queue_model.objects.filter(id__lt=processed).update(status="Processed", processed_at=timezone.now())
    Greeting.queue_model.objects.filter(id__gte=processed, id__lt=processed + 1000).update(
        status="Error", error_type="builtins.RuntimeError", error_message="boom")
    Greeting.queue_model.objects.filter(id__gte=first + rows - 1000).update(status="OnHold")
    fill_minutes()
    fill_processes()
    with connection.cursor() as cursor:
        for model in (Greeting.queue_model, QueueMinute, WorkerProcess, WorkerProcessQueue):
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    return time.perf_counter() - started


def fill_minutes() -> None:
    """A day of minutes for every queue, and its all-time row."""
    now = minute_of(timezone.now())
    minutes = int(MINUTES_KEPT / timedelta(minutes=1))
    QueueMinute.objects.bulk_create(
        QueueMinute(queue=cls.queue_name(), minute=minute, processed=50, errors=1, runs=10, run_seconds=2.5)
        for cls in registry for minute in [ALL_TIME, *(now - timedelta(minutes=m) for m in range(minutes))]
    )


def fill_processes() -> None:
    """20 live workers of every queue, and 1,000 stopped ones that housekeeping has not yet cleaned."""
    now = timezone.now()
    for n in range(1020):
        live = n < 20
        row = WorkerProcess.objects.create(
            kind="worker", host=f"host-{n}", pid=n, version="0", started_at=now - timedelta(hours=1),
            last_seen_at=now if live else now - timedelta(hours=2), stopped_at=None if live else now,
            dispatches=n % 10 == 0, doing="sleeping")
        WorkerProcessQueue.objects.bulk_create(WorkerProcessQueue(process=row, queue=c.queue_name()) for c in registry)


def timed(client: Client, headers: dict[str, str]) -> list[float]:
    times = []
    for _ in range(REPEAT + 1):
        started = time.perf_counter()
        response = client.get("/nexus/metrics/", **headers)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200 and b"nexus_queues_scrape_complete 1.0" in response.content
    return times[1:]


def main() -> None:
    with bench_database("bench_metrics"):
        if Greeting.queue_model.objects.count() != ROWS:
            Greeting.queue_model.objects.all().delete()
            print(f"filled {ROWS:,} rows in {fill(ROWS):.1f} s (enqueue_many, COPY, batches of {BATCH:,})")
        user = User.objects.get_or_create(username="prometheus", is_superuser=True)[0]
        headers = {"HTTP_AUTHORIZATION": f"Bearer {make_token(user)}"}
        print(f"{len(registry)} queues; {'METRICS_COUNT_LIMIT':>20} {'p50 ms':>8} {'p95 ms':>8} {'worst ms':>9} "
              f"{'queries':>8}   ({REPEAT} scrapes each)")
        for limit in LIMITS:
            with override_settings(NEXUS_QUEUES={**django.conf.settings.NEXUS_QUEUES, "METRICS_COUNT_LIMIT": limit}):
                times = timed(Client(), headers)
                with CaptureQueriesContext(connection) as queries:
                    Client().get("/nexus/metrics/", **headers)
            p95 = statistics.quantiles(times, n=20, method="inclusive")[-1]
            print(f"{'':10} {limit:>20,} {statistics.median(times):8.1f} {p95:8.1f} {max(times):9.1f} "
                  f"{len(queries):8}")


if __name__ == "__main__":
    main()
