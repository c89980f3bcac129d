"""A user whose only permission on a queue is change: the admin opens the queue's pages to them (change implies view,
as in Django's admin), and the API, the jobs API and the metrics page read the same queue for them."""

from __future__ import annotations

import pytest
from django.test import Client

from nexus_queues import enqueue_many
from tests.api_client import Api, make_user
from tests.testapp.queues import Inventory

pytestmark = pytest.mark.django_db


def test_api__change_permission_reads_what_the_admin_shows(client: Client) -> None:
    """Every read the admin allows with change alone, the API allows too: the queue, its messages, batches,
    settings, its job, and its figures on the metrics page."""
    batch = enqueue_many([Inventory(sku="s1", quantity=1)], batch="stock").batch
    operator = make_user("operator", "change_inventoryqueueitem")
    operator.is_staff = True
    operator.save()
    client.force_login(operator)
    assert client.get("/admin/testapp/inventoryqueueitem/").status_code == 200

    api = Api(operator)
    for path in ("queues/inventory", "queues/inventory/messages", f"queues/inventory/batches/{batch}",
                 "queues/inventory/settings", "jobs/tests.testapp.jobs.InventoryJob"):
        assert api.get(path).status_code == 200, path
    assert [queue["name"] for queue in api.get("queues").json()] == ["inventory"]
    assert [job["name"] for job in api.get("jobs").json()] == ["tests.testapp.jobs.InventoryJob"]
    metrics = api.client.get("/nexus/metrics/", **api.headers)
    assert metrics.status_code == 200 and b'queue="inventory"' in metrics.content
