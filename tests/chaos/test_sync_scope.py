"""Another queue's Spark syncs through the admin: a user who may view one queue reads nothing of the other queue's
syncs (stream, error), where the API answers 403 for that queue."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from nexus_queues.contrib.spark.models import Sync
from tests.api_client import PASSWORD, Api

pytestmark = pytest.mark.django_db

SECRETS = (b"vault-stream", b"the-vault-rejected")


def test_sync_admin__a_user_of_one_queue_reads_nothing_of_another_queues_syncs(client: Client) -> None:
    """The syncs' list, search, queue filter and a sync's pages keep another queue's sync to itself."""
    Sync.objects.create(queue="greetings", stream="greeting-stream")
    theirs = Sync.objects.create(queue="inventory", stream="vault-stream", state=Sync.State.FAILED,
                                 error="the-vault-rejected")
    user = User.objects.create_user("greeter", password=PASSWORD, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_sync", "view_greetingqueueitem"]))
    client.force_login(user)

    assert Api(user).get("queues/inventory").status_code == 403
    syncs = "/admin/nexus_spark/sync/"
    pages = [syncs, f"{syncs}?q=vault", f"{syncs}?queue=inventory",
             *(f"{syncs}{theirs.pk}/{page}/" for page in ("change", "delete", "history"))]
    for page in pages:
        response = client.get(page)
        assert response.status_code in (200, 404), page
        assert not any(secret in response.content for secret in SECRETS), page
