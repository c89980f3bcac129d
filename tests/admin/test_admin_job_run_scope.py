"""The job runs' admin, scoped by queue: a user sees the runs of the queues whose pages they may view, periodic runs
when they may view periodic jobs, and no other; a restricted list still reads an index, not the whole table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from nexus_queues.models import JobRun

pytestmark = pytest.mark.django_db

RUNS = "/admin/nexus_queues/jobrun/"
STARTED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
JOBS = {"greetings": "tests.testapp.jobs.GreetingJob", "inventory": "tests.testapp.jobs.InventoryJob",
        "": "tests.testapp.jobs.Heartbeat", "retired": "gone.jobs.RetiredJob"}


def staff(client: Client, *codenames: str) -> Client:
    """``client`` logged in as a staff user holding these permission codenames."""
    user = User.objects.create_user("operator", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def runs_of_every_kind() -> dict[str, JobRun]:
    """A run of greetings, of inventory, of the periodic Heartbeat and of a queue no longer defined, by queue."""
    return {queue: JobRun.objects.create(job=job, queue=queue, correlation_id=f"{queue or 'periodic'}-run",
                                         worker="host:1", started_at=STARTED, tick=None if queue else STARTED)
            for queue, job in JOBS.items()}


def listed(client: Client, query: str = "") -> set[str]:
    """The queues of the runs the list shows ("" for a periodic run)."""
    response = client.get(f"{RUNS}{query}")
    assert response.status_code == 200
    return {run.queue for run in response.context["cl"].result_list}


def test_job_run_admin__lists_only_the_runs_of_queues_the_user_may_view(client: Client) -> None:
    """The list, a search (by correlation id or job) and the queue and job filters show greetings' runs alone."""
    runs_of_every_kind()
    client = staff(client, "view_jobrun", "view_greetingqueueitem")
    assert listed(client) == {"greetings"}
    for query in ("?q=inventory-run", "?q=Inventory", "?q=Heartbeat", "?q=Retired", "?queue=inventory",
                  "?queue=retired", f"?job={JOBS['']}"):
        assert listed(client, query) == set(), query
    assert listed(client, "?queue=greetings") == {"greetings"}


def choices(client: Client) -> dict[str, list[str]]:
    """The list's filters by title, each with the choices it offers."""
    changelist = client.get(RUNS).context["cl"]
    return {str(spec.title): [str(c["display"]) for c in spec.choices(changelist)] for spec in changelist.filter_specs}


def test_job_run_admin__filters_offer_only_what_the_user_may_view(client: Client) -> None:
    offered = choices(staff(client, "view_jobrun", "view_greetingqueueitem"))
    assert offered["queue"] == ["All", "greetings"] and offered["job"] == ["All", JOBS["greetings"]]


def test_job_run_admin__change_permission_on_a_queue_shows_its_runs(client: Client) -> None:
    """Change implies view, as on the queue's own pages."""
    runs_of_every_kind()
    assert listed(staff(client, "view_jobrun", "change_inventoryqueueitem")) == {"inventory"}


@pytest.mark.parametrize("codename", ["view_periodicjobsettings", "change_periodicjobsettings"])
def test_job_run_admin__periodic_runs_for_who_may_view_periodic_jobs(client: Client, codename: str) -> None:
    """Periodic runs (no queue) are shown to the users the jobs page shows periodic jobs to, and their jobs are in the
    job filter."""
    runs = runs_of_every_kind()
    client = staff(client, "view_jobrun", codename)
    assert listed(client) == {""}
    assert client.get(f"{RUNS}{runs[''].pk}/change/").status_code == 200
    assert "queue" not in choices(client) and JOBS[""] in choices(client)["job"]


def test_job_run_admin__another_queues_run_is_not_found(client: Client) -> None:
    """The change, delete and history pages of a run the user may not view answer 404, as for a run that does not
    exist; the user's own run opens."""
    runs = runs_of_every_kind()
    client = staff(client, "view_jobrun", "delete_jobrun", "view_greetingqueueitem")
    missing = max(run.pk for run in runs.values()) + 1000
    for page in ("change", "delete", "history"):
        for queue in ("inventory", "", "retired"):
            assert client.get(f"{RUNS}{runs[queue].pk}/{page}/").status_code == 404, (page, queue)
        assert client.get(f"{RUNS}{missing}/{page}/").status_code == 404, page
        assert client.get(f"{RUNS}{runs['greetings'].pk}/{page}/").status_code == 200, page
    assert client.post(f"{RUNS}{runs['inventory'].pk}/delete/", {"post": "yes"}).status_code == 404
    assert JobRun.objects.filter(pk=runs["inventory"].pk).exists()


def test_job_run_admin__a_superuser_sees_every_run(admin_client: Client) -> None:
    """Those of a queue no longer defined too, which no permission names: the superuser alone sees them."""
    runs = runs_of_every_kind()
    assert listed(admin_client) == set(JOBS)
    assert admin_client.get(f"{RUNS}{runs['retired'].pk}/change/").status_code == 200


def test_job_run_admin__a_user_of_every_queue_does_not_see_a_retired_queues_runs(client: Client) -> None:
    runs_of_every_kind()
    codenames = ["view_jobrun", "view_periodicjobsettings", *(p.codename for p in Permission.objects.filter(
        codename__startswith="view_", codename__endswith="queueitem"))]
    assert listed(staff(client, *codenames)) == {"greetings", "inventory", ""}


PLANS = {
    "postgresql": ("EXPLAIN", "Index Cond: ((queue)::text = 'greetings'::text)", "Seq Scan"),
    "mysql": ("EXPLAIN", "nx_jobrun_queue_started", "filesort"),
    "sqlite": ("EXPLAIN QUERY PLAN", "USING INDEX nx_jobrun_queue_started (queue=?)", "TEMP B-TREE"),
}
"""Per engine: how to ask for a plan, what shows the queue's index serves the filter and the order, and what would
show a read or a sort of the whole table."""


def test_job_run_admin__a_restricted_list_reads_its_queue_through_an_index(client: Client) -> None:
    """A user of one queue gets its newest runs from the (queue, started_at) index, in the list's order, and a count
    capped at ``count_limit``: the filter neither reads nor sorts the other queues' runs."""
    JobRun.objects.bulk_create(
        JobRun(job=JOBS[queue], queue=queue, correlation_id=f"run-{n}", worker="host:1",
               started_at=STARTED + timedelta(seconds=n))
        for n, queue in enumerate(["greetings" if n % 10 == 0 else "inventory" for n in range(1500)])
    )
    with CaptureQueriesContext(connection) as queries:
        html = staff(client, "view_jobrun", "view_greetingqueueitem").get(RUNS).content.decode()
    assert 'rel="next"' in html and "150 job runs" in html
    reads = [q["sql"] for q in queries.captured_queries if "nexus_job_run" in q["sql"]]
    [page] = [sql for sql in reads if "ORDER BY" in sql]
    [count] = [sql for sql in reads if "COUNT(" in sql.upper()]
    assert "LIMIT 10001" in count
    explain, uses_the_index, whole_table = PLANS[connection.vendor]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")  # as on a table of millions
        cursor.execute(f"{explain} {page}")
        plan = "\n".join(" ".join(map(str, row)) for row in cursor.fetchall())
    assert uses_the_index in plan and whole_table not in plan, plan
