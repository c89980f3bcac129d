"""Batches of a queue no longer defined (its class removed, its batches left): a superuser still sees them and may
delete them; no one else sees them, as no permission names that queue any more."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from nexus_queues.models import Batch

pytestmark = pytest.mark.django_db


def test_batch_admin__a_superuser_sees_and_deletes_a_retired_queues_batch(admin_client: Client) -> None:
    """The list shows the batch, its page opens, and its delete page removes it."""
    now = timezone.now()
    retired = Batch.objects.create(queue="retired", label="left-behind", total=3, created_at=now, counted_at=now)
    batches = "/admin/nexus_queues/batch/"
    assert [batch.pk for batch in admin_client.get(batches).context["cl"].result_list] == [retired.pk]
    assert b"left-behind" in admin_client.get(f"{batches}{retired.pk}/change/").content
    assert admin_client.post(f"{batches}{retired.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Batch.objects.filter(pk=retired.pk).exists()
