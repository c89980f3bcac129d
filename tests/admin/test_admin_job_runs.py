"""The job runs' admin: a periodic run's tick, outcome and traceback, on the engine DATABASE_URL picks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from nexus_queues.models import JobRun, WorkerProcess

pytestmark = pytest.mark.django_db

HEARTBEAT = "tests.testapp.jobs.Heartbeat"
STARTED = datetime(2026, 3, 1, 12, 34, 56, tzinfo=UTC)
TRACEBACK = 'Traceback (most recent call last):\n  File "jobs.py", line 9, in run\nRuntimeError: <the heartbeat failed>'


def periodic_run(**fields: object) -> JobRun:
    values = {"job": HEARTBEAT, "correlation_id": "cid-heartbeat", "worker": "host:1", "started_at": STARTED,
              "tick": STARTED, **fields}
    return JobRun.objects.create(**values)


def test_job_run_admin__periodic_run_shows_tick_outcome_and_traceback(admin_client: Client) -> None:
    """A failed periodic run's page shows its tick, its outcome and its traceback in a <pre>, escaped."""
    run = periodic_run(finished_at=STARTED + timedelta(seconds=3), errors=1, error=TRACEBACK)
    html = admin_client.get(f"/admin/nexus_queues/jobrun/{run.pk}/change/").content.decode()
    assert '<span class="nexus-outcome nexus-outcome-failed">failed</span>' in html
    tick = html.split('class="form-row field-tick_time"')[1].split('<div class="help">')[0]
    assert '<div class="readonly">2026-03-01 12:34:56</div>' in tick
    escaped = TRACEBACK.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    assert f'<pre class="nexus-traceback">{escaped}</pre>' in html


def test_job_run_admin__list_shows_outcome_and_short_job(admin_client: Client) -> None:
    """The run list shows each run's start to the second (its correlation id as title), outcome, and its job's short
    name (the dotted path as title)."""
    periodic_run(finished_at=STARTED + timedelta(seconds=3))
    html = admin_client.get("/admin/nexus_queues/jobrun/").content.decode()
    assert '<span class="nexus-outcome nexus-outcome-succeeded">succeeded</span>' in html
    assert f'<span title="{HEARTBEAT}">Heartbeat</span>' in html
    assert '<span title="correlation id cid-heartbeat">2026-03-01 12:34:56</span></a></th>' in html


def test_job_run_admin__worker_links_to_its_process(admin_client: Client) -> None:
    """A run's worker (host:pid) links to the worker process list filtered to that host and pid, which lists that
    process and not another with the same pid elsewhere."""
    periodic_run(worker="web-1.example:4242")
    for host in ("web-1.example", "web-2.example"):
        WorkerProcess.objects.create(kind="worker", host=host, pid=4242, version="1", started_at=STARTED,
                                     last_seen_at=STARTED, doing="idle")
    html = admin_client.get("/admin/nexus_queues/jobrun/").content.decode()
    link = '<a href="/admin/nexus_queues/workerprocess/?host=web-1.example&amp;pid=4242">web-1.example:4242</a>'
    assert link in html
    processes = admin_client.get("/admin/nexus_queues/workerprocess/?host=web-1.example&pid=4242")
    assert [p.host for p in processes.context["cl"].result_list] == ["web-1.example"]


def test_job_run_admin__a_correlation_id_is_found_through_its_index(admin_client: Client) -> None:
    """A correlation id pasted from a log line (any case, spaces around) finds its run by an exact comparison, which
    the unique index serves, not the case-insensitive search of every field; other words still search the job."""
    wanted = "0123456789abcdef0123456789abcdef"
    periodic_run(correlation_id=wanted)
    periodic_run(correlation_id="fedcba9876543210fedcba9876543210", job="tests.testapp.jobs.Other")

    with CaptureQueriesContext(connection) as queries:
        found = admin_client.get("/admin/nexus_queues/jobrun/", {"q": f" {wanted.upper()} "}).context["cl"]
    assert [run.correlation_id for run in found.result_list] == [wanted]
    searches = [q["sql"] for q in queries.captured_queries if "nexus_job_run" in q["sql"] and wanted in q["sql"]]
    assert searches and not [sql for sql in searches if "UPPER" in sql or "LIKE" in sql]
    by_job = admin_client.get("/admin/nexus_queues/jobrun/", {"q": "Other"}).context["cl"]
    assert [run.job for run in by_job.result_list] == ["tests.testapp.jobs.Other"]


def test_job_run_admin__filters_offer_the_registered_queues_and_jobs_without_reading_the_runs(
    admin_client: Client,
) -> None:
    """The queue and job filters offer what the code registers (a queue that never ran too), not the values the
    runs hold, which read the whole table on every page; choosing one narrows the list."""
    periodic_run()
    JobRun.objects.create(job="tests.testapp.jobs.PingJob", queue="pings", correlation_id="c" * 32, worker="host:1",
                          started_at=STARTED)

    with CaptureQueriesContext(connection) as queries:
        listed = admin_client.get("/admin/nexus_queues/jobrun/").context["cl"]
    assert [q["sql"] for q in queries.captured_queries if "DISTINCT" in q["sql"]] == []
    choices = {str(spec.title): [str(c["display"]) for c in spec.choices(listed)] for spec in listed.filter_specs}
    assert {"greetings", "pings"} <= set(choices["queue"])
    assert {HEARTBEAT, "tests.testapp.jobs.PingJob", "tests.testapp.jobs.GreetingJob"} <= set(choices["job"])
    pings = admin_client.get("/admin/nexus_queues/jobrun/", {"queue": "pings"}).context["cl"]
    assert [run.job for run in pings.result_list] == ["tests.testapp.jobs.PingJob"]
    heartbeats = admin_client.get("/admin/nexus_queues/jobrun/", {"job": HEARTBEAT}).context["cl"]
    assert [run.correlation_id for run in heartbeats.result_list] == ["cid-heartbeat"]


@pytest.mark.engines("postgresql")
def test_job_run_admin__list_newest_first_reads_an_index(admin_client: Client) -> None:
    """The list's order (started_at, then id, newest first) is an index's: a page reads its rows from the index
    (here with sequential scans priced out, as on a table of millions) rather than sorting the whole table."""
    for n in range(3):
        periodic_run(correlation_id=f"cid-{n}", tick=STARTED + timedelta(minutes=n))
    with CaptureQueriesContext(connection) as queries:
        admin_client.get("/admin/nexus_queues/jobrun/")
    listed = next(q["sql"] for q in queries.captured_queries if "ORDER BY" in q["sql"] and "nexus_job_run" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {listed}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "nx_jobrun_started" in plan and "Sort" not in plan, plan


def test_job_run_admin__list_counts_no_further_than_its_limit(admin_client: Client) -> None:
    """The list reads a page and one row more; it counts only when there is a next page, and then reads at most
    ``count_limit`` rows, as the queues' lists do: the whole table's count was a scan of every run on each page."""
    JobRun.objects.bulk_create(
        JobRun(job=HEARTBEAT, correlation_id=f"cid-{n}", worker="host:1", started_at=STARTED + timedelta(seconds=n))
        for n in range(101)
    )
    with CaptureQueriesContext(connection) as queries:
        html = admin_client.get("/admin/nexus_queues/jobrun/").content.decode()
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert len(counts) == 1 and "LIMIT 10001" in counts[0], counts
    assert 'rel="next"' in html and "101 job runs" in html

    JobRun.objects.filter(correlation_id__in=["cid-0", "cid-1"]).delete()
    with CaptureQueriesContext(connection) as queries:
        html = admin_client.get("/admin/nexus_queues/jobrun/").content.decode()
    assert [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()] == []
    assert 'rel="next"' not in html and "99 job runs" in html


def test_job_run_admin__offers_no_facet_counts(admin_client: Client) -> None:
    """No "Show counts" link, and ``?_facets`` counts nothing: each filter choice's count would read the runs (the
    job's has no index), several counts a page on a table of millions, as the queues' lists."""
    periodic_run()
    assert "_facets" not in admin_client.get("/admin/nexus_queues/jobrun/").content.decode()
    with CaptureQueriesContext(connection) as queries:
        admin_client.get("/admin/nexus_queues/jobrun/?_facets=True")
    assert [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()] == []
