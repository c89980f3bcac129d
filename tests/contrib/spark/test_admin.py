"""Spark syncs in the admin: listed with their counts, read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from nexus_queues.contrib.spark.models import Sync

pytestmark = pytest.mark.django_db


def test_sync_admin__lists_syncs_read_only(admin_client: Any) -> None:
    """The change list shows each sync's queue, state and counts; syncs cannot be added or edited there."""
    stored = Sync.objects.create(queue="products", state=Sync.State.STORED, new=1234, unchanged=5)
    Sync.objects.create(queue="products", state=Sync.State.FAILED, error="2 rows were rejected")

    page = admin_client.get(reverse("admin:nexus_spark_sync_changelist"))

    assert page.status_code == 200
    text = page.content.decode()
    assert "1234" in text and "Failed" in text and "Stored" in text
    assert reverse("admin:nexus_spark_sync_add") not in text
    detail = admin_client.get(reverse("admin:nexus_spark_sync_change", args=[stored.pk]))
    assert detail.status_code == 200 and 'type="submit" value="Save"' not in detail.content.decode()
    assert admin_client.post(reverse("admin:nexus_spark_sync_change", args=[stored.pk]), {"new": 1}).status_code == 403
