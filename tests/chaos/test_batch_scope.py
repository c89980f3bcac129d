"""Another queue's batches through the admin: a user who may view one queue reads nothing of the other queue's
batches (label, completion message), where the API already answered 403 for them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from nexus_queues import enqueue_many
from tests.api_client import PASSWORD, Api
from tests.testapp.queues import BatchReport, Greeting, Inventory

pytestmark = pytest.mark.django_db

SECRETS = (b"secret-stock", b"count-the-vault")


def test_batch_admin__a_user_of_one_queue_reads_nothing_of_another_queues_batch(client: Client) -> None:
    """Every admin page that shows batches (list, search, filter, change, delete, history, dashboard) keeps another
    queue's batch to itself, as the API does."""
    enqueue_many([Greeting(name="a")], batch="greetings")
    stock = enqueue_many(
        [Inventory(sku="s1", quantity=1)], batch="secret-stock", on_complete=BatchReport(note="count-the-vault")
    ).batch
    user = User.objects.create_user("greeter", password=PASSWORD, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_batch", "view_greetingqueueitem"]))
    client.force_login(user)

    assert Api(user).get(f"queues/inventory/batches/{stock}").status_code == 403
    batches = "/admin/nexus_queues/batch/"
    pages = [
        batches, f"{batches}?q=secret", f"{batches}?queue=inventory",
        *(f"{batches}{stock}/{page}/" for page in ("change", "delete", "history")), "/admin/nexus_queues/dashboard/",
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code in (200, 404), page
        assert not any(secret in response.content for secret in SECRETS), page
