"""The batch endpoints: a queue's batches and one batch's counts."""

import pytest

from nexus_queues import Status, enqueue_many, update_status
from tests.api_client import Api, make_user
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db


def test_get_batch__its_counts(admin):
    """A batch's total, pending and finished counts, and when it completed (not yet)."""
    batch = enqueue_many([Greeting(name=n) for n in "abc"], batch="sync").batch
    update_status(Greeting, Status.ERROR, message__name="a")
    body = admin.get(f"queues/greetings/batches/{batch}").json()
    assert {k: body[k] for k in ("id", "queue", "label", "total", "pending", "processed", "error", "cancelled")} == {
        "id": batch, "queue": "greetings", "label": "sync", "total": 3, "pending": 2, "processed": 0, "error": 1,
        "cancelled": 0,
    }
    assert body["completed_at"] is None
    assert [b["id"] for b in admin.get("queues/greetings/batches").json()] == [batch]


def test_get_batch__unknown_or_of_another_queue_is_404(admin):
    batch = enqueue_many([Greeting(name="a")], batch="sync").batch
    assert admin.get("queues/audits/batches/" + str(batch)).status_code == 404
    assert admin.get("queues/greetings/batches/999999").status_code == 404


def test_list_batches__needs_the_queue_view_permission():
    enqueue_many([Greeting(name="a")], batch="sync")
    assert Api(make_user("nobody")).get("queues/greetings/batches").status_code == 403
