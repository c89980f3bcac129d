"""The queue admin on a big table: 1,000,000 greetings on PostgreSQL, pages timed through the test client.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_admin_bench \\
        .venv/bin/python tests/benchmarks/bench_admin.py [ROWS]

Creates (and afterwards drops, unless KEEPDB=1) the test database ``test_<name>``, fills the greetings queue with
``enqueue_many`` (COPY) in batches, makes 1,000 rows Error and 1,000 OnHold, runs VACUUM ANALYZE as
autovacuum would, logs in a superuser and prints milliseconds per page (median and worst of REPEAT
requests after one warm-up): change list, status filters, search, a far page, a message's change view,
and the queue's health check; then as many job runs (by SQL), their list and a search by correlation id and by job.
"""

import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from nexus_queues import enqueue_many, queue_health  # noqa: E402
from nexus_queues.models import JobRun  # noqa: E402
from tests.benchmarks.databases import bench_databases  # noqa: E402
from tests.testapp.queues import Greeting  # noqa: E402

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
BATCH = 100_000
REPEAT = int(os.environ.get("REPEAT", 7))
KEEPDB = os.environ.get("KEEPDB") == "1"
"""KEEPDB=1 keeps the filled database for the next run (and reuses it)."""
URL = "/admin/testapp/greetingqueueitem/"


def fill_runs(rows: int) -> float:
    """``rows`` job runs of the greetings' job, by SQL; correlation ids as the worker makes them (32 hex digits)."""
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {JobRun._meta.db_table} (job, queue, correlation_id, worker, started_at, finished_at, "
            "leased, processed, errors, rescheduled, error) SELECT 'tests.testapp.jobs.GreetingJob', 'greetings', "
            "md5(g::text), 'host:1', now() - g * interval '1 second', now(), 1, 1, 0, 0, '' "
            "FROM generate_series(1, %s) g", [rows])
        cursor.execute(f"VACUUM ANALYZE {JobRun._meta.db_table}")
    return time.perf_counter() - started


def fill(rows: int) -> float:
    started = time.perf_counter()
    for start in range(0, rows, BATCH):
        enqueue_many([Greeting(name=f"person-{n}", times=n % 7) for n in range(start, min(rows, start + BATCH))])
    ids = Greeting.queue_model.objects.order_by("id").values_list("id", flat=True)
    first = ids.first()
    Greeting.queue_model.objects.filter(id__gte=first + rows // 2, id__lt=first + rows // 2 + 1000).update(
        status="Error", error_type="builtins.RuntimeError", error_message="boom")
    Greeting.queue_model.objects.filter(id__gte=first + rows - 1000).update(status="OnHold")
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {Greeting.queue_model._meta.db_table}")
    return time.perf_counter() - started


@contextmanager
def bench_database(script: str) -> Iterator[None]:
    """The test database ``test_<name>`` of DATABASE_URL, on PostgreSQL only; dropped afterwards unless KEEPDB=1."""
    if connection.vendor != "postgresql":
        sys.exit(f"{script} measures PostgreSQL: set DATABASE_URL=postgres://...")
    with bench_databases(keepdb=KEEPDB):
        yield


def timed(call: Callable[[], object]) -> tuple[float, float]:
    call()
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times)


def page(client: Client, url: str) -> Callable[[], object]:
    def get() -> None:
        assert client.get(url).status_code == 200, url

    return get


def main() -> None:
    with bench_database("bench_admin"):
        if Greeting.queue_model.objects.count() != ROWS:
            Greeting.queue_model.objects.all().delete()
            print(f"filled {ROWS:,} rows in {fill(ROWS):.1f} s (enqueue_many, COPY, batches of {BATCH:,})")
        client = Client()
        client.force_login(User.objects.get_or_create(username="bench", is_staff=True, is_superuser=True)[0])
        item = Greeting.queue_model.objects.order_by("id")[ROWS // 3 : ROWS // 3 + 1].get()
        pages = {
            "change list": URL,
            "status filter Pending": f"{URL}?status=Pending",
            "status filter Error (1,000 rows)": f"{URL}?status=Error",
            "has error": f"{URL}?has_error=yes",
            "created today": f"{URL}?created_at__gte={_today()}",
            "search, common text (person-1)": f"{URL}?q=person-1",
            "search, one match (person-777777)": f"{URL}?q=person-777777",
            "page 500": f"{URL}?p=500",
            "change view": f"{URL}{item.pk}/change/",
        }
        print(f"{'page':40} {'median ms':>10} {'worst ms':>10}   ({REPEAT} requests each)")
        calls = {name: page(client, url) for name, url in pages.items()}
        calls["health check (queue_health)"] = lambda: queue_health(Greeting)
        if JobRun.objects.count() != ROWS:
            JobRun.objects.all().delete()
            print(f"filled {ROWS:,} job runs in {fill_runs(ROWS):.1f} s (SQL)")
        runs = "/admin/nexus_queues/jobrun/"
        correlation_id = JobRun.objects.order_by("id")[ROWS // 3 : ROWS // 3 + 1].get().correlation_id
        calls |= {name: page(client, url) for name, url in {
            "job runs: list": runs,
            "job runs: search, a correlation id": f"{runs}?q={correlation_id}",
            "job runs: search, a job (Greeting)": f"{runs}?q=Greeting",
        }.items()}  # fmt: skip
        for name, call in calls.items():
            median, worst = timed(call)
            print(f"{name:40} {median:10.1f} {worst:10.1f}")


def _today() -> str:
    return quote(timezone.now().replace(hour=0, minute=0, second=0, microsecond=0).isoformat())


if __name__ == "__main__":
    main()
