"""The admin's dashboard through Django's test client, on the engine DATABASE_URL picks: its figures, permissions,
category pages, the fragment it refreshes, the links to it, and its bounded queries."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import enqueue_many
from nexus_queues.models import JobRun
from nexus_queues.processes import WorkerProcess, WorkerProcessQueue
from nexus_queues.throughput import ALL_TIME, QueueMinute
from tests.factories import ErrorFactory
from tests.testapp.queues import Greeting, Shipment

pytestmark = pytest.mark.django_db

DASHBOARD = "/admin/nexus_queues/dashboard/"


def staff(client: Client, *codenames: str) -> Client:
    """``client`` logged in as a new staff user holding exactly these permissions."""
    user = User.objects.create_user(f"staff-{User.objects.count()}", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def shown(response: object) -> dict[str, list[str]]:
    """The dashboard's sections: category -> queue names."""
    return {category: [row.name for row in rows] for category, rows in response.context["sections"]}


def row_of(response: object, queue: str) -> object:
    return next(row for _, rows in response.context["sections"] for row in rows if row.name == queue)


def minutes(queue: str, count: int, processed: int, errors: int = 0) -> datetime:
    """``count`` minutes of counts for ``queue``, up to now's minute, which is returned."""
    now = timezone.now().replace(second=0, microsecond=0)
    QueueMinute.objects.bulk_create(
        QueueMinute(queue=queue, minute=now - timedelta(minutes=n), processed=processed, errors=errors, runs=1)
        for n in range(count)
    )
    return now


def live_worker(*queues: str, pid: int = 1, dispatches: bool = False) -> WorkerProcess:
    now = timezone.now()
    row = WorkerProcess.objects.create(kind="worker", host="box", pid=pid, version="1", started_at=now,
                                       last_seen_at=now, doing="sleeping", dispatches=dispatches)
    WorkerProcessQueue.objects.bulk_create(WorkerProcessQueue(process=row, queue=q) for q in queues)
    return row


def test_dashboard__every_queue_by_category_with_its_figures(admin_client: Client) -> None:
    """Each queue is in its category's section with its capped counts per status, health, oldest Pending, and
    processed and errors per minute over the last hour (older minutes left out); its live workers are listed."""
    enqueue_many([Greeting(name=str(n)) for n in range(3)])
    ErrorFactory.create(queue=Greeting)
    last_written = minutes("greetings", 90, processed=4, errors=1)
    live_worker("greetings", pid=41)
    response = admin_client.get(DASHBOARD)
    # The hour ends at the view's own minute: on a slow machine that is a minute past the last one written.
    view_minute = response.context["now"].replace(second=0, microsecond=0)
    shown_minutes = 60 - (view_minute - last_written) // timedelta(minutes=1)
    assert response.status_code == 200
    sections = shown(response)
    assert sections["Tests"] == ["greetings"] and "shipments" in sections["RabbitMQ"]
    row = row_of(response, "greetings")
    assert row.overview.counts == {"Error": 1, "Pending": 3}
    assert row.overview.health.status == "unhealthy" and row.overview.pending_since is not None
    assert (row.last_hour.processed, row.last_hour.errors) == (4 * shown_minutes, shown_minutes)
    assert (row.processed_per_minute, row.errors_per_minute) == (4 * shown_minutes / 60, shown_minutes / 60)
    assert [live.process.pid for live in row.workers] == [41]
    html = response.content.decode()
    assert '<svg class="nexus-chart"' in html and "box:41" in html and "1 message(s) in Error or Abandoned" in html


def test_dashboard__counts_stop_at_the_admins_limit(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """A status with more messages than the admin counts shows the limit with a plus."""
    from nexus_queues.admin import QueueItemAdmin

    monkeypatch.setattr(QueueItemAdmin, "count_limit", 2)
    enqueue_many([Greeting(name=str(n)) for n in range(3)])
    assert str(row_of(admin_client.get(DASHBOARD), "greetings").overview.counts["Pending"]) == "2+"


def test_dashboard__category_page_and_unknown_category(admin_client: Client) -> None:
    """``?category=`` shows only that category's queues; a category without queues is a 404."""
    response = admin_client.get(DASHBOARD, {"category": "RabbitMQ"})
    assert list(shown(response)) == ["RabbitMQ"]
    assert "RabbitMQ: dashboard" in response.content.decode()
    assert admin_client.get(DASHBOARD, {"category": "Nowhere"}).status_code == 404


def test_dashboard__span_day_draws_the_day(admin_client: Client) -> None:
    """``?span=day`` draws 15-minute bars over the day; an unknown span is a 404."""
    minutes("greetings", 3, processed=2)
    response = admin_client.get(DASHBOARD, {"category": "Tests", "span": "day"})
    assert 'data-span="day"' in str(row_of(response, "greetings").chart)
    assert admin_client.get(DASHBOARD, {"span": "week"}).status_code == 404


def test_dashboard__fragment_is_the_figures_alone(admin_client: Client) -> None:
    """``?fragment=1`` answers the part the page refreshes: the sections and processes, without the page around."""
    html = admin_client.get(DASHBOARD, {"fragment": "1"}).content.decode()
    assert 'id="dashboard-tests"' in html and 'id="dashboard-processes"' in html
    assert "<html" not in html and "dashboard.js" not in html


def test_dashboard__shows_only_queues_the_user_may_view(client: Client) -> None:
    """A staff user sees the queues they may view and no other; with none of them, 403; without staff, the login."""
    staff(client, "view_greetingqueueitem")
    assert shown(client.get(DASHBOARD)) == {"Tests": ["greetings"]}
    assert client.get(DASHBOARD, {"category": "RabbitMQ"}).status_code == 404
    staff(client)
    assert client.get(DASHBOARD).status_code == 403
    client.logout()
    assert client.get(DASHBOARD).status_code == 302


def test_dashboard__processes_live_ones_of_shown_queues_and_dispatch_loops(client: Client) -> None:
    """The processes list has the live workers of the queues shown and the dispatch loops, naming only shown
    queues; it links to the worker processes only for who may view them."""
    live_worker("greetings", "shipments", pid=1)
    live_worker("shipments", pid=2)
    live_worker(pid=3, dispatches=True)
    staff(client, "view_greetingqueueitem")
    response = client.get(DASHBOARD)
    listed = {live.process.pid: queues for live, queues in response.context["processes"]}
    assert listed == {1: ["greetings"], 3: []}
    assert response.context["processes_url"] == ""
    staff(client, "view_greetingqueueitem", "view_workerprocess")
    assert client.get(DASHBOARD).context["processes_url"] == "/admin/nexus_queues/workerprocess/"


def test_index__categories_link_to_their_dashboard_page(admin_client: Client) -> None:
    """Each category section of the index links to the dashboard of that category; the Queues section lists the
    dashboard."""
    html = admin_client.get("/admin/").content.decode()
    assert f'href="{DASHBOARD}?category=RabbitMQ" class="section"' in html
    assert f'<a href="{DASHBOARD}">Dashboard</a>' in html


def test_changelist__links_to_its_categorys_dashboard(admin_client: Client) -> None:
    html = admin_client.get("/admin/testapp/greetingqueueitem/").content.decode()
    assert f'href="{DASHBOARD}?category=Tests" id="queue-dashboard-link"' in html


def a_year_of_runs(queue: str) -> None:
    """A run an hour for a year, and the last day's minutes plus the folded all-time row."""
    now = timezone.now()
    JobRun.objects.bulk_create(
        (JobRun(job="tests.testapp.jobs.GreetingJob", queue=queue, correlation_id=uuid.uuid4().hex, worker="w:1",
                started_at=now - timedelta(hours=n), finished_at=now - timedelta(hours=n), leased=10, processed=9,
                errors=1) for n in range(24 * 365)), batch_size=1000,
    )
    minutes(queue, 24 * 60, processed=9, errors=1)
    QueueMinute.objects.create(queue=queue, minute=ALL_TIME, processed=10**6, errors=10**4, runs=10**5)


def page_queries(client: Client, **query: str) -> list[str]:
    """The SQL the dashboard ran for one page view."""
    with CaptureQueriesContext(connections["default"]) as captured:
        assert client.get(DASHBOARD, query).status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def test_dashboard__queries_bounded_by_queues_not_rows_and_never_read_job_runs(admin_client: Client) -> None:
    """A year of job runs and a day of minutes change neither the number of queries nor what they read: the job
    runs table is never queried, and a one-queue category page takes a fixed number of queries."""
    enqueue_many([Greeting(name="waiting")])
    enqueue_many([Shipment(order_id="o-1")])
    before = {category: page_queries(admin_client, category=category) for category in ("Tests", "")}
    a_year_of_runs("greetings")
    after = {category: page_queries(admin_client, category=category) for category in ("Tests", "")}
    assert {c: len(q) for c, q in after.items()} == {c: len(q) for c, q in before.items()}
    assert not [sql for sql in (*after["Tests"], *after[""]) if "nexus_job_run" in sql]
    # Session and user 2, live processes 1; the queue: statuses 2, count 1, oldest Pending 1, health 5 (its
    # troubled consumers one), settings 2, minutes 1; the batches 1.
    assert len(after["Tests"]) == 16, "\n".join(after["Tests"])
