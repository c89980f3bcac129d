"""Another queue's job runs through the admin: a user who may view one queue reads nothing of the other queue's runs
(job, worker, correlation id, traceback), where the API answers 403 for that queue."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from nexus_queues.models import JobRun
from tests.api_client import PASSWORD, Api

pytestmark = pytest.mark.django_db

STARTED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SECRETS = (b"vault-host", b"the-vault-burned")


def test_job_run_admin__a_user_of_one_queue_reads_nothing_of_another_queues_runs(client: Client) -> None:
    """Every admin page that shows runs (list, search, filters, change, delete, history) keeps another queue's run to
    itself, as the API does; the user's own queue's run opens."""
    JobRun.objects.create(job="tests.testapp.jobs.GreetingJob", queue="greetings", correlation_id="a" * 32,
                          worker="greeter-host:1", started_at=STARTED)
    theirs = JobRun.objects.create(job="tests.testapp.jobs.InventoryJob", queue="inventory", correlation_id="b" * 32,
                                   worker="vault-host:2", started_at=STARTED, errors=1, error="the-vault-burned")
    user = User.objects.create_user("greeter", password=PASSWORD, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_jobrun", "view_greetingqueueitem"]))
    client.force_login(user)

    assert Api(user).get("queues/inventory").status_code == 403
    runs = "/admin/nexus_queues/jobrun/"
    pages = [
        runs, f"{runs}?q={'b' * 32}", f"{runs}?q=Inventory", f"{runs}?queue=inventory",
        f"{runs}?job=tests.testapp.jobs.InventoryJob",
        *(f"{runs}{theirs.pk}/{page}/" for page in ("change", "delete", "history")),
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code in (200, 404), page
        assert not any(secret in response.content for secret in SECRETS), page
        if response.status_code == 200:
            assert theirs not in response.context["cl"].result_list, page
