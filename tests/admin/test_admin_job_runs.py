"""The job runs' admin: a periodic run's tick, outcome and traceback, on the engine DATABASE_URL picks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

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
