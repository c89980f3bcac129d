"""The admin dashboard on a big site: a 1,000,000-row queue and a year of job runs on PostgreSQL, pages timed
through the test client.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_dash_bench \\
        .venv/bin/python tests/benchmarks/bench_dashboard.py [ROWS] [RUNS]

Creates (and afterwards drops, unless KEEPDB=1) the test database ``test_<name>``; fills the greetings queue with
ROWS messages (1,000 Error, 1,000 OnHold, the rest Pending) as bench_admin.py does, writes RUNS job runs of the
greetings job (525,600 by default: one a minute for a year), a day of per-minute counts and an all-time row for
every queue, 4 live workers, a live dispatch loop and 1,000 gone processes, runs VACUUM ANALYZE, logs in a
superuser and prints milliseconds per page, p50 and p95 of REPEAT requests after one warm-up: the whole
dashboard, a category's page, the day's charts and the fragment the page polls.
"""

import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from nexus_queues.models import JobRun  # noqa: E402
from nexus_queues.processes import WorkerProcess, WorkerProcessQueue  # noqa: E402
from nexus_queues.registry import registry  # noqa: E402
from nexus_queues.throughput import ALL_TIME, QueueMinute  # noqa: E402
from tests.benchmarks.bench_admin import bench_database, fill  # noqa: E402
from tests.testapp.queues import Greeting  # noqa: E402

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 525_600
BATCH = 10_000
REPEAT = int(os.environ.get("REPEAT", 41))
URL = "/admin/nexus_queues/dashboard/"


def a_year_of_runs(runs: int) -> float:
    """RUNS finished runs of the greetings job, one a minute back from now."""
    started, now = time.perf_counter(), timezone.now()
    for start in range(0, runs, BATCH):
        JobRun.objects.bulk_create(
            JobRun(job="tests.testapp.jobs.GreetingJob", queue="greetings", correlation_id=uuid.uuid4().hex,
                   worker="bench:1", started_at=now - timedelta(minutes=n), finished_at=now - timedelta(minutes=n),
                   leased=10, processed=9, errors=1)
            for n in range(start, min(runs, start + BATCH))
        )
    return time.perf_counter() - started


def minutes_and_processes() -> None:
    """A day of minutes and an all-time row per queue; live workers, a dispatch loop and gone processes."""
    now = timezone.now()
    minute = now.replace(second=0, microsecond=0)
    for message_class in registry:
        queue = message_class.queue_name()
        QueueMinute.objects.bulk_create(
            [QueueMinute(queue=queue, minute=minute - timedelta(minutes=n), processed=9, errors=1, runs=1)
             for n in range(24 * 60)] + [QueueMinute(queue=queue, minute=ALL_TIME, processed=10**7, runs=10**6)]
        )
    for pid in range(1, 1006):
        live = pid <= 5
        row = WorkerProcess.objects.create(
            kind="worker" if pid > 1 else "dispatch", host=f"worker-{pid % 7}", pid=pid, version="bench",
            started_at=now - timedelta(days=1), last_seen_at=now if live else now - timedelta(hours=pid),
            dispatches=pid == 1, doing="sleeping",
        )
        if pid > 1:
            WorkerProcessQueue.objects.bulk_create(WorkerProcessQueue(process=row, queue=mc.queue_name())
                                                   for mc in registry)


def timed(call: Callable[[], object]) -> tuple[float, float]:
    call()
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), statistics.quantiles(times, n=20)[18]


def page(client: Client, url: str) -> Callable[[], object]:
    def get() -> None:
        assert client.get(url).status_code == 200, url

    return get


def fill_all() -> None:
    print(f"filled {ROWS:,} rows in {fill(ROWS):.1f} s (enqueue_many, COPY)")
    print(f"wrote {RUNS:,} job runs in {a_year_of_runs(RUNS):.1f} s")
    minutes_and_processes()
    with connection.cursor() as cursor:
        for table in (JobRun, QueueMinute, WorkerProcess, WorkerProcessQueue):
            cursor.execute(f"VACUUM ANALYZE {table._meta.db_table}")


def main() -> None:
    with bench_database("bench_dashboard"):
        if Greeting.queue_model.objects.count() != ROWS or JobRun.objects.count() != RUNS:
            for model in (Greeting.queue_model, JobRun, QueueMinute, WorkerProcess):
                model.objects.all().delete()
            fill_all()
        client = Client()
        client.force_login(User.objects.get_or_create(username="bench", is_staff=True, is_superuser=True)[0])
        pages = {
            f"dashboard ({len(registry)} queues)": URL,
            "category Tests (the 1M-row queue)": f"{URL}?category=Tests",
            "category Tests, last day": f"{URL}?category=Tests&span=day",
            "fragment (the 5 s poll), whole": f"{URL}?fragment=1",
            "change list (for comparison)": "/admin/testapp/greetingqueueitem/",
        }
        print(f"{'page':40} {'p50 ms':>8} {'p95 ms':>8}   ({REPEAT} requests each)")
        for name, url in pages.items():
            median, p95 = timed(page(client, url))
            print(f"{name:40} {median:8.1f} {p95:8.1f}")


if __name__ == "__main__":
    main()
