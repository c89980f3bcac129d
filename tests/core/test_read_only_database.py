"""PostgreSQL: the metrics page and the admin's reading pages write nothing, so they can be served from a read-only
database, as a hot standby (a read replica) is; an operator's change there fails instead of being lost."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import InternalError, connection, transaction
from django.test import Client
from django.utils import timezone

from nexus_queues.api_tokens import make_token
from nexus_queues.processes import ProcessKind, WorkerProcess
from tests.api_client import make_user
from tests.factories import ErrorFactory, PendingFactory
from tests.testapp.queues import Greeting

pytestmark = [pytest.mark.django_db, pytest.mark.engines("postgresql")]

GREETINGS = "/admin/testapp/greetingqueueitem/"


@pytest.fixture
def read_only(admin_client: Client) -> Iterator[Client]:
    """A signed-in admin client and a bearer token, then the test's transaction made read-only: any write from
    here on fails with PostgreSQL's "cannot execute ... in a read-only transaction", as on a standby."""
    PendingFactory.create_batch(3, queue=Greeting)
    ErrorFactory.create(queue=Greeting)
    now = timezone.now()
    WorkerProcess.objects.create(kind=ProcessKind.WORKER, host="h", pid=1, started_at=now, last_seen_at=now)
    admin_client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {make_token(make_user('prometheus', superuser=True))}"
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the foreign keys checked now: a check is a locking read
        cursor.execute("SET TRANSACTION READ ONLY")
    yield admin_client
    with connection.cursor() as cursor:
        cursor.execute("SHOW transaction_read_only")
        assert cursor.fetchone()[0] == "on"


def test_read_only__metrics_scrape(read_only: Client) -> None:
    """A scrape reads its figures without writing."""
    response = read_only.get("/nexus/metrics/")
    assert response.status_code == 200
    assert 'nexus_queues_messages{queue="greetings",status="Pending"} 3.0' in response.content.decode()


@pytest.mark.parametrize(
    "page",
    [
        GREETINGS,
        f"{GREETINGS}?status__exact=Error",
        "/admin/nexus_queues/dashboard/",
        "/admin/nexus_queues/workerprocess/",
    ],
)
def test_read_only__admin_pages_that_read(read_only: Client, page: str) -> None:
    """The dashboard, a queue's change list and its filters, and the live workers are served without a write."""
    assert read_only.get(page).status_code == 200


def test_read_only__an_operators_change_fails(read_only: Client) -> None:
    """A change on a read-only database is refused by the database, not silently dropped."""
    [pk] = Greeting.queue_items().filter(status="Error").values_list("pk", flat=True)
    with pytest.raises(InternalError, match="read-only transaction"), transaction.atomic():
        read_only.post(GREETINGS, {"action": "set_pending", "index": "0", "_selected_action": [str(pk)]})
