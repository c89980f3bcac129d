"""The live workers' admin: a read-only list of the worker and dispatch processes with their state."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from nexus_queues.admin.job_runs import with_seconds
from nexus_queues.processes import WorkerProcess, WorkerProcessQueue

pytestmark = pytest.mark.django_db

LIST = "/admin/nexus_queues/workerprocess/"


def process(pid: int, seen_ago: timedelta, **fields: object) -> WorkerProcess:
    seen = timezone.now() - seen_ago
    values = {"kind": "worker", "host": "box", "pid": pid, "version": "0.1.0", "started_at": seen - timedelta(hours=1),
              "last_seen_at": seen, "doing": "sleeping", **fields}
    return WorkerProcess.objects.create(**values)


def test_process_admin__lists_live_and_gone_processes(admin_client: Client) -> None:
    """The list shows each process's host:pid, queues, state badge, last heartbeat with seconds and what it does, with
    the run in hand linked to its job run."""
    live = process(11, timedelta(seconds=3), doing="running", concurrency=2,
                   runs=[{"queue": "greetings", "correlation_id": "abcdef0123456789"}])
    WorkerProcessQueue.objects.create(process=live, queue="greetings")
    WorkerProcessQueue.objects.create(process=live, queue="pings")
    process(12, timedelta(minutes=5), kind="dispatch", dispatches=True)
    html = admin_client.get(LIST).content.decode()
    assert "box:11" in html and "box:12" in html
    assert '<span class="nexus-process nexus-process-live">live</span>' in html
    assert '<span class="nexus-process nexus-process-gone">gone</span>' in html
    assert "greetings, pings" in html
    assert '<a href="/admin/nexus_queues/jobrun/?q=abcdef0123456789">abcdef01</a>' in html
    assert re.search(rf"{with_seconds(live.last_seen_at)} <span class=\"quiet\">\(\d+ s ago\)</span>", html)
    assert "Add worker process" not in html


def test_process_admin__is_read_only(admin_client: Client) -> None:
    """No add, change or delete: the processes keep their own rows."""
    row = process(13, timedelta(0), stopped_at=timezone.now())
    assert admin_client.get(f"{LIST}add/").status_code == 403
    assert admin_client.get(f"{LIST}{row.pk}/delete/").status_code == 403
    page = admin_client.get(f"{LIST}{row.pk}/change/")
    assert page.status_code == 200 and 'type="submit"' not in page.content.decode().split('id="content-main"')[1]
    assert 'nexus-process-stopped' in admin_client.get(LIST).content.decode()


def test_process_admin__index_names_the_list_worker_processes(admin_client: Client) -> None:
    """The admin index lists "Worker processes" (a plural Django would otherwise spell "processs")."""
    html = admin_client.get("/admin/").content.decode()
    assert ">Worker processes</a>" in html and "processs" not in html
