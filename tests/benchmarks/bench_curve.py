"""The cost curve: what each operation costs as an idempotent catalogue queue grows from 100,000 to 10,000,000 rows.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nq_curve .venv/bin/python tests/benchmarks/bench_curve.py \\
        --sizes 100000,1000000,10000000 --worker 1000000 --output /tmp/curve.json
    .venv/bin/python tests/benchmarks/bench_curve.py --plot /tmp/curve.json   # docs/images/cost_curve.png

Works in the database of DATABASE_URL itself (migrated first; PostgreSQL only), on the test app's ``products`` queue
(idempotent, the sku as message id, prices and attributes). The queue is grown in place to each size in SQL
(``INSERT ... SELECT FROM generate_series``: each row's canonical JSON and its SHA-256 as ``enqueue`` computes them;
98% Processed with the message as its previous version, 1% Error, 1% Sleeping due in a month), then ``VACUUM
ANALYZE`` as autovacuum would. The trigram search index is dropped first (opt-in, and most of a fill's cost).

At each size every operation runs once to warm up, then REPEAT times (fewer for the slow ones); the median is
kept with every run's time: ``enqueue`` of one new product, ``enqueue_many`` of 1,000 new ones, the same call with
1,000 stored products unchanged (writes nothing), ``lease(100)`` + ``mark_processed``, a dispatch step
(``dispatch_due`` with 100 due messages), ``queue_health``, the admin's change list and a page filtered to Error,
the dashboard and a metrics scrape (the test client, a superuser and an API token: real views and templates), and
``update_status`` matching 10 rows by a JSON property (``message__name``) without and with an index on it.

``--worker N`` fills the pings queue with N messages and drains them through ``manage.py nexus_worker --burst
--queue pings`` (the no-op Ping job, batches of 100), sampling the process's resident memory from /proc.

Every run records its load average (/proc/loadavg). The tables are emptied at the end unless --keep.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("NEXUS_TEST_BATCH", "100")  # the Ping job's batch

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from nexus_queues import (  # noqa: E402
    dispatch_due,
    enqueue,
    enqueue_many,
    lease,
    mark_processed,
    queue_health,
    update_status,
)
from nexus_queues.api_tokens import make_token  # noqa: E402
from nexus_queues.models import index_name  # noqa: E402
from tests.testapp.more_queues import Ping  # noqa: E402
from tests.testapp.queues import Price, Product  # noqa: E402

TABLE = Product.queue_model._meta.db_table
PINGS = Ping.queue_model._meta.db_table
REPEAT = int(os.environ.get("REPEAT", 9))
CHUNK = 1_000_000
NAME_INDEX = "bench_curve_message_name"
ADMIN = "/admin/testapp/productqueueitem/"
DASHBOARD = "/admin/nexus_queues/dashboard/"

# One product per n: its canonical JSON (keys sorted, no spaces) built in SQL exactly as canonical_json writes it
# (%% is a literal % beside the statement's parameters).
PRODUCT_JSON = (
    """format('{"attributes":{"brand":"b%%s"},"name":"Product %%s","prices":[{"amount":"%%s.99","currency":"EUR"}],"""
    """"sku":"%%s"}', n %% 100, n / 10, n %% 1000, 'SKU-' || lpad(n::text, 9, '0'))"""
)
FILL = f"""
INSERT INTO {TABLE} (message_id, message, previous_message, message_hash, headers, status, process_at, attempts,
                     error_type, error_message, error_traceback, created_at, updated_at, processed_at)
SELECT sku, j::jsonb, CASE WHEN st = 'Processed' THEN j::jsonb END, encode(sha256(convert_to(j, 'UTF8')), 'hex'),
       '{{}}'::jsonb, st, CASE WHEN st = 'Sleeping' THEN now() + interval '30 days' + n * interval '1 ms' END, 1,
       CASE WHEN st = 'Error' THEN 'builtins.RuntimeError' ELSE '' END, CASE WHEN st = 'Error' THEN 'boom' ELSE '' END,
       '', t, t, CASE WHEN st = 'Processed' THEN t END
FROM (SELECT n, 'SKU-' || lpad(n::text, 9, '0') AS sku, {PRODUCT_JSON} AS j,
             CASE n %% 100 WHEN 0 THEN 'Error' WHEN 1 THEN 'Sleeping' ELSE 'Processed' END AS st,
             now() - interval '30 days' + n * interval '200 ms' AS t
      FROM generate_series(%s, %s) AS n) AS s
"""
FILL_PINGS = f"""
INSERT INTO {PINGS} (message, message_hash, headers, status, attempts, error_type, error_message, error_traceback,
                     created_at, updated_at)
SELECT j::jsonb, encode(sha256(convert_to(j, 'UTF8')), 'hex'), '{{}}'::jsonb, 'Pending', 0, '', '', '', now(), now()
FROM (SELECT format('{{"n":%%s}}', n) AS j FROM generate_series(1, %s) AS n) AS s
"""


def product(n: int) -> Product:
    """The product the fill wrote for ``n``."""
    return Product(
        sku=f"SKU-{n:09d}",
        name=f"Product {n // 10}",
        prices=[Price(currency="EUR", amount=Decimal(f"{n % 1000}.99"))],
        attributes={"brand": f"b{n % 100}"},
    )


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def sql(statement: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def filled() -> int:
    """How many products the fill wrote (the SKU- rows), from the highest sku."""
    row = sql(f"SELECT max(message_id) FROM {TABLE} WHERE message_id LIKE 'SKU-%%'")[0][0]
    return int(row[4:]) if row else 0


def grow(size: int) -> float:
    """Fill the queue up to ``size`` fill rows, a million per statement, then VACUUM ANALYZE; the seconds taken."""
    started = time.perf_counter()
    for first in range(filled() + 1, size + 1, CHUNK):
        sql(FILL, [first, min(size, first + CHUNK - 1)])
    sql(f"VACUUM ANALYZE {TABLE}")
    return time.perf_counter() - started


class Operations:
    """Each measured operation, with what it needs prepared (untimed) before each run."""

    def __init__(self, size: int) -> None:
        self.size, self.new = size, 0
        self.random = random.Random(size)
        user = User.objects.get_or_create(username="bench", is_staff=True, is_superuser=True)[0]
        self.client = Client()
        self.client.force_login(user)
        self.token = {"HTTP_AUTHORIZATION": f"Bearer {make_token(user)}"}

    def new_products(self, count: int) -> list[Product]:
        self.new += count
        return [Product(sku=f"NEW-{self.size}-{self.new - i}", name="New", prices=[]) for i in range(count)]

    def unchanged(self, count: int) -> list[Product]:
        """``count`` stored Processed products, as the fill wrote them."""
        picked = (self.random.randrange(1, self.size + 1) for _ in range(count * 2))
        return [product(n) for n in picked if n % 100 > 1][:count]

    def enqueue(self) -> Callable[[], object]:
        message = self.new_products(1)[0]
        return lambda: enqueue(message)

    def enqueue_many(self) -> Callable[[], object]:
        messages = self.new_products(1000)
        return lambda: enqueue_many(messages)

    def reenqueue(self) -> Callable[[], object]:
        messages = self.unchanged(1000)

        def call() -> None:
            result = enqueue_many(messages)
            assert not result.stored and len(result.discarded) == len(messages), "an unchanged product was written"

        return call

    def lease_and_acknowledge(self) -> Callable[[], object]:
        return lambda: mark_processed(lease(Product, 100))

    def dispatch(self) -> Callable[[], object]:
        first = self.random.randrange(1, self.size - 100_000) if self.size > 100_000 else 1
        sql(
            f"UPDATE {TABLE} SET process_at = now() - interval '1 s' WHERE id IN (SELECT id FROM {TABLE} "
            "WHERE status = 'Sleeping' AND id >= %s ORDER BY id LIMIT 100)",
            [first],
        )
        return lambda: dispatch_due()

    def health(self) -> Callable[[], object]:
        return lambda: queue_health(Product)

    def page(self, url: str, **headers: str) -> Callable[[], object]:
        def get() -> None:
            assert self.client.get(url, **headers).status_code == 200, url

        return lambda: get

    def update_by_property(self) -> Callable[[], object]:
        name = f"Product {self.random.randrange(1, self.size // 10)}"

        def call() -> None:
            assert update_status(Product, "OnHold", message__name=name) == 10, name
            update_status(Product, "Processed", message__name=name)

        return call


def drain_pending() -> None:
    """Process what the operations left Pending, so that every size starts from the same mix."""
    while mark_processed(lease(Product, 1000)):
        pass


def backend_cpu_ns() -> int:
    """CPU time of this connection's PostgreSQL backend so far (/proc/<pid>/schedstat: the server is local)."""
    pid = sql("SELECT pg_backend_pid()")[0][0]
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def database_work() -> tuple[int, int]:
    """(pages read from the buffers or disk, rows read) in this database so far: only this script uses it while it
    measures, so the difference around a call is the call's work, which the machine's load does not change."""
    sql("SELECT pg_stat_force_next_flush()")  # this backend's counts, flushed when that statement's transaction ends
    return sql(
        "SELECT blks_hit + blks_read, tup_returned + tup_fetched FROM pg_stat_database WHERE datname = "
        "current_database()"
    )[0]


def measure(prepare: Callable[[], Callable[[], object]], repeat: int) -> dict[str, Any]:
    """One warm-up, then ``repeat`` timed runs of what ``prepare`` returns (prepared afresh, untimed, each run):
    the median wall time, the median CPU time of this process and of its database backend, and the median pages
    and rows the database read. The CPU time a busy machine inflates less than the wall time; the pages and rows
    not at all."""
    prepare()()
    wall, client, server, pages, rows = [], [], [], [], []
    for _ in range(repeat):
        call = prepare()
        work_before, backend_before = database_work(), backend_cpu_ns()
        cpu, started = time.process_time(), time.perf_counter()
        call()
        wall.append((time.perf_counter() - started) * 1000)
        client.append((time.process_time() - cpu) * 1000)
        server.append((backend_cpu_ns() - backend_before) / 1e6)
        work_after = database_work()
        pages.append(work_after[0] - work_before[0])
        rows.append(work_after[1] - work_before[1])
    return {
        "median_ms": statistics.median(wall),
        "client_cpu_ms": statistics.median(client),
        "server_cpu_ms": statistics.median(server),
        "cpu_ms": statistics.median(map(sum, zip(client, server, strict=True))),
        "pages": statistics.median(pages),
        "rows_read": statistics.median(rows),
        "runs_ms": [round(t, 3) for t in wall],
    }


def measure_size(size: int, slow_repeat: int) -> dict[str, Any]:
    ops = Operations(size)
    pages = {
        "admin change list": ops.page(ADMIN),
        "admin filtered page (Error, page 2)": ops.page(f"{ADMIN}?status=Error&p=2"),
        "dashboard": ops.page(DASHBOARD),
        "metrics scrape": ops.page("/nexus/metrics/", **ops.token),
    }
    plan: dict[str, tuple[Callable[[], Callable[[], object]], int]] = {
        "enqueue": (ops.enqueue, REPEAT * 3),
        "enqueue_many (1,000 new)": (ops.enqueue_many, REPEAT),
        "re-enqueue 1,000 unchanged": (ops.reenqueue, REPEAT),
        "dispatch step (100 due)": (ops.dispatch, REPEAT),
        "lease(100) + mark_processed": (ops.lease_and_acknowledge, REPEAT * 3),
        "queue_health": (ops.health, REPEAT),
        **{name: (call, REPEAT) for name, call in pages.items()},
        "update_status by message__name, no index": (ops.update_by_property, slow_repeat),
    }
    results: dict[str, Any] = {}
    for name, (prepare, repeat) in plan.items():
        results[name] = measure(prepare, repeat) | {"load": load()}
        report(name, results[name])
    started = time.perf_counter()
    sql(f"CREATE INDEX {NAME_INDEX} ON {TABLE} ((message -> 'name'))")
    sql(f"ANALYZE {TABLE}")
    index_seconds = time.perf_counter() - started
    name = "update_status by message__name, indexed"
    results[name] = measure(ops.update_by_property, REPEAT) | {"load": load(), "index_seconds": index_seconds}
    report(name, results[name], f"index made in {index_seconds:.1f} s")
    sql(f"DROP INDEX {NAME_INDEX}")
    drain_pending()
    sql(f"VACUUM ANALYZE {TABLE}")
    return results


def report(name: str, result: dict[str, Any], note: str = "") -> None:
    print(
        f"  {name:45} {result['median_ms']:9.1f} ms wall {result['client_cpu_ms']:9.1f} ms CPU here "
        f"{result['server_cpu_ms']:9.1f} ms CPU in PostgreSQL {result['pages']:9,.0f} pages "
        f"{result['rows_read']:11,.0f} rows "
        f"(load {load():.1f}) {note}",
        flush=True,
    )


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def worker_memory(count: int) -> dict[str, Any]:
    """Drain ``count`` pings through a real burst worker, sampling its RSS and the rows left each second."""
    sql(f"TRUNCATE {PINGS}")
    started = time.perf_counter()
    sql(FILL_PINGS, [count])
    sql(f"VACUUM ANALYZE {PINGS}")
    print(f"filled {count:,} pings in {time.perf_counter() - started:.1f} s", flush=True)
    command = [
        sys.executable,
        str(ROOT / "manage.py"),
        "nexus_worker",
        "--burst",
        "--queue",
        "pings",
        "--settings",
        "tests.settings",
    ]
    worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples, started = [], time.perf_counter()
    while worker.poll() is None:
        try:
            rss = rss_kib(worker.pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        left = sql(f"SELECT count(*) FROM {PINGS}")[0][0]
        samples.append(
            {"s": round(time.perf_counter() - started, 2), "rss_kib": rss, "processed": count - left, "load": load()}
        )
        time.sleep(1)
    worker.wait()
    elapsed = time.perf_counter() - started
    left = sql(f"SELECT count(*) FROM {PINGS}")[0][0]
    assert worker.returncode == 0 and left == 0, (worker.returncode, left)
    steady = [s["rss_kib"] for s in samples if s["processed"] >= count // 10]
    print(
        f"drained {count:,} pings in {elapsed:.1f} s; RSS after the first 10%: {min(steady) / 1024:.1f} to "
        f"{max(steady) / 1024:.1f} MiB",
        flush=True,
    )
    return {"messages": count, "seconds": elapsed, "samples": samples}


def table(results: dict[str, Any]) -> str:
    """The figures as a Markdown table: per size the median wall time and CPU time (here + PostgreSQL), and the
    growth of each from the smallest size to the largest."""
    sizes = sorted(results["sizes"], key=int)
    first, last = (results["sizes"][s]["operations"] for s in (sizes[0], sizes[-1]))
    head = " | ".join(f"{int(s):,} rows: wall / CPU ms" for s in sizes)
    lines = [f"| operation | {head} | growth, wall / CPU |", "| --- |" + " ---: |" * (len(sizes) + 1)]
    for name in first:
        cells = []
        for size in sizes:
            op = results["sizes"][size]["operations"][name]
            cells.append(f"{op['median_ms']:,.1f} / {op['cpu_ms']:,.1f}")
        growth = (
            f"{last[name]['median_ms'] / first[name]['median_ms']:.2f}x / "
            f"{last[name]['cpu_ms'] / first[name]['cpu_ms']:.2f}x"
        )
        lines.append(f"| {name} | {' | '.join(cells)} | {growth} |")
    return "\n".join(lines)


def plot(results_files: list[Path], image: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results: dict[str, Any] = {"sizes": {}}
    for file in results_files:  # a run's sizes and another's worker drain
        found = json.loads(file.read_text())
        results = {**results, **found, "sizes": {**results["sizes"], **found.get("sizes", {})}}
    print(table(results))
    sizes = sorted(results["sizes"], key=int)
    figure, (costs, memory) = plt.subplots(1, 2, figsize=(14, 6.5), gridspec_kw={"width_ratios": [3, 2]})
    names = list(results["sizes"][sizes[0]]["operations"])
    colours = plt.get_cmap("tab20").colors
    for index, name in enumerate(names):
        cpu = [results["sizes"][s]["operations"][name]["cpu_ms"] for s in sizes]
        costs.plot(
            [int(s) for s in sizes], cpu, marker="osD^v<>pPXh*"[index % 12], color=colours[index % 20], label=name
        )
    costs.set(
        xscale="log",
        yscale="log",
        xlabel="rows in the queue",
        ylabel="median CPU ms per call (Python + PostgreSQL backend)",
        title="What each operation costs as the queue grows (PostgreSQL)",
    )
    costs.grid(True, which="both", alpha=0.3)
    costs.legend(fontsize=7, loc="upper left")
    if "worker" in results:
        samples = results["worker"]["samples"]
        memory.plot([s["processed"] for s in samples], [s["rss_kib"] / 1024 for s in samples])
        memory.set(
            xlabel="messages processed",
            ylabel="resident memory, MiB",
            ylim=(0, None),
            title=f"nexus_worker --burst over {results['worker']['messages']:,} messages",
        )
        memory.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(image, dpi=80)
    print(f"wrote {image}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--worker", type=int, default=0, help="drain this many pings through a burst worker")
    parser.add_argument("--output", type=Path, default=Path("/tmp/curve.json"))
    parser.add_argument("--slow-repeat", type=int, default=3, help="runs of update_status without an index")
    parser.add_argument("--keep", action="store_true", help="keep the filled tables")
    parser.add_argument("--plot", type=Path, nargs="+", help="only draw the picture from these JSON outputs")
    parser.add_argument("--image", type=Path, default=ROOT / "docs" / "images" / "cost_curve.png")
    args = parser.parse_args()
    if args.plot:
        return plot(args.plot, args.image)
    if connection.vendor != "postgresql":
        sys.exit("bench_curve.py measures PostgreSQL: set DATABASE_URL=postgres://...")
    call_command("migrate", verbosity=0)
    setup_test_environment()  # the test client's host, testserver
    sql(f"DROP INDEX IF EXISTS {index_name(TABLE, 'search')}")  # the opt-in trigram index (see the docs' big tables)
    results: dict[str, Any] = json.loads(args.output.read_text()) if args.output.exists() else {"sizes": {}}
    try:
        for size in [int(s) for s in args.sizes.split(",") if s]:
            seconds = grow(size)
            rows = sql(f"SELECT count(*) FROM {TABLE}")[0][0]
            print(f"{size:,} products ({rows:,} rows) filled in {seconds:.1f} s, load {load():.1f}", flush=True)
            entry = {
                "rows": rows,
                "fill_seconds": seconds,
                "load_before": load(),
                "operations": measure_size(size, args.slow_repeat),
                "load_after": load(),
            }
            results["sizes"][str(size)] = entry
            args.output.write_text(json.dumps(results, indent=1))
        if args.worker:
            results["worker"] = worker_memory(args.worker)
            args.output.write_text(json.dumps(results, indent=1))
    finally:
        if not args.keep:
            sql(f"TRUNCATE {TABLE}, {PINGS}")
    print(f"results in {args.output}")


if __name__ == "__main__":
    main()
