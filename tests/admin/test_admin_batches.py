"""The batches' admin: each batch's counts and state, and its messages on their queue's page."""

import pytest
from django.test import Client

from nexus_queues import Status, enqueue_many, update_status
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db


def test_batch_admin__lists_counts_and_links_to_the_members(admin_client: Client) -> None:
    """The list shows total, pending and finished counts; the link opens the queue's page on the batch's messages."""
    batch = enqueue_many([Greeting(name=n) for n in "abc"], batch="catalogue").batch
    enqueue_many([Greeting(name="outsider")])
    update_status(Greeting, Status.CANCELLED, message__name="a")
    html = admin_client.get("/admin/nexus_queues/batch/").content.decode()
    assert "catalogue" in html
    assert '<td class="field-pending_count">2</td>' in html
    assert '<td class="field-cancelled">1</td>' in html
    assert '<span class="nexus-batch nexus-batch-running">running</span>' in html
    link = f"/admin/testapp/greetingqueueitem/?batch={batch}"
    assert f'<a href="{link}">greetings messages</a>' in html
    members = admin_client.get(link).content.decode()
    assert "outsider" not in members and members.count('class="field-summary"') == 3


def test_queue_admin__a_batch_filter_that_is_not_an_id_is_refused(admin_client: Client) -> None:
    response = admin_client.get("/admin/testapp/greetingqueueitem/?batch=x")
    assert response.status_code == 302 and "?e=1" in response["Location"]


def test_dashboard__shows_open_batches_with_their_progress(admin_client: Client) -> None:
    """The dashboard lists a batch not yet complete with its progress and a link to its messages."""
    batch = enqueue_many([Greeting(name=n) for n in "abcd"], batch="prices").batch
    update_status(Greeting, Status.PROCESSED, message__name="a")
    html = admin_client.get("/admin/nexus_queues/dashboard/").content.decode()
    assert f'<tr class="nexus-batch-row" data-batch="{batch}">' in html
    assert '<progress max="4" value="1"></progress> 1 / 4' in html
    assert f'<a href="/admin/testapp/greetingqueueitem/?batch={batch}">{batch} prices</a>' in html
