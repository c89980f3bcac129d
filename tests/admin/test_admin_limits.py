"""The admin shows each queue's limits in force and what waits on them: the queue's page and the dashboard."""

import pytest
from django.test import Client

from nexus_queues import enqueue_many, lease
from tests.testapp.more_queues import Errand

pytestmark = pytest.mark.django_db


def test_queue_page__shows_the_limits_and_what_waits_on_them(admin_client: Client) -> None:
    """The change list's overview has a Limits box for a limited queue."""
    enqueue_many([Errand(n=n) for n in range(3)])
    lease(Errand, 10)
    page = admin_client.get("/admin/testapp/errandqueueitem/").content.decode()
    assert '<div id="queue-limits">' in page
    assert "2 at once: 2 in use; 1 Pending wait on them" in page


def test_queue_page__no_limits_box_without_limits(admin_client: Client) -> None:
    """A queue without limits shows none."""
    assert 'id="queue-limits"' not in admin_client.get("/admin/testapp/greetingqueueitem/").content.decode()


def test_dashboard__shows_the_limits_under_the_queue(admin_client: Client) -> None:
    """The dashboard's row of a limited queue says its limits and their use."""
    enqueue_many([Errand(n=n) for n in range(3)])
    lease(Errand, 1)
    page = admin_client.get("/admin/nexus_queues/dashboard/").content.decode()
    assert '<div class="nexus-limits">2 at once: 1 in use; 0 Pending wait on them</div>' in page
