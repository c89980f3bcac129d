"""Spark syncs in the admin: listed with their counts, read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
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


def test_sync_admin__a_user_sees_the_syncs_of_the_queues_they_may_view(client: Any, admin_client: Any) -> None:
    """Its list and queue filter hold the queues the user may view; another queue's sync answers 404; the superuser
    sees every sync, of a queue no longer defined too."""
    mine = Sync.objects.create(queue="greetings")
    theirs = Sync.objects.create(queue="inventory")
    retired = Sync.objects.create(queue="retired")
    user = User.objects.create_user("greeter", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_sync", "view_greetingqueueitem"]))
    client.force_login(user)

    page = client.get(reverse("admin:nexus_spark_sync_changelist"))
    assert [sync.pk for sync in page.context["cl"].result_list] == [mine.pk]
    queue_filter = next(spec for spec in page.context["cl"].filter_specs if spec.title == "queue")
    assert [choice["display"] for choice in queue_filter.choices(page.context["cl"])] == ["All", "greetings"]
    assert client.get(reverse("admin:nexus_spark_sync_change", args=[theirs.pk])).status_code == 404
    everything = admin_client.get(reverse("admin:nexus_spark_sync_changelist")).context["cl"].result_list
    assert {sync.pk for sync in everything} == {mine.pk, theirs.pk, retired.pk}


def test_sync_admin__shows_the_path_and_why(admin_client: Any) -> None:
    """The list shows each sync's path; its page shows why it took it."""
    record = Sync.objects.create(queue="products", path=Sync.Path.JVM, path_reason="Spark's JDBC writer reaches it.")

    listed = admin_client.get(reverse("admin:nexus_spark_sync_changelist")).content.decode()
    detail = admin_client.get(reverse("admin:nexus_spark_sync_change", args=[record.pk])).content.decode()

    assert "JVM" in listed
    assert "Spark&#x27;s JDBC writer reaches it." in detail
