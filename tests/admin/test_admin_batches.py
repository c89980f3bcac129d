"""The batches' admin: each batch's counts and state, and its messages on their queue's page."""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from nexus_queues import Status, enqueue_many, update_status
from nexus_queues.models import Batch
from tests.testapp.queues import BatchReport, Greeting, Inventory

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


def greeter(client: Client) -> Client:
    """``client`` logged in as a staff user who may view batches and the greetings queue, not the inventory's."""
    user = User.objects.create_user("greeter", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_batch", "view_greetingqueueitem"]))
    client.force_login(user)
    return client


def two_queues_batches() -> tuple[int, int]:
    """A batch of greetings and one of inventory, each with a label and a completion message naming its queue."""
    greetings = enqueue_many([Greeting(name="a")], batch="greetings-label", on_complete=BatchReport(note="greeted"))
    stock = enqueue_many([Inventory(sku="s1", quantity=1)], batch="secret-stock", on_complete=BatchReport(note="tally"))
    return greetings.batch, stock.batch


def test_batch_admin__lists_only_the_batches_of_queues_the_user_may_view(client: Client) -> None:
    """Another queue's batch is not in the list, not found by a search or a filter, and its label never shown."""
    mine, theirs = two_queues_batches()
    client = greeter(client)
    for query in ("", "?q=secret", f"?q={theirs}", "?queue=inventory", "?queue=greetings&_facets=1"):
        response = client.get(f"/admin/nexus_queues/batch/{query}")
        assert response.status_code == 200
        shown = [batch.pk for batch in response.context["cl"].result_list]
        assert theirs not in shown and "secret-stock" not in response.content.decode()
    assert [b.pk for b in client.get("/admin/nexus_queues/batch/").context["cl"].result_list] == [mine]


def test_batch_admin__the_queue_filter_offers_only_queues_the_user_may_view(client: Client) -> None:
    two_queues_batches()
    response = greeter(client).get("/admin/nexus_queues/batch/")
    [queue_filter] = response.context["cl"].filter_specs
    assert [choice["display"] for choice in queue_filter.choices(response.context["cl"])] == ["All", "greetings"]


def test_batch_admin__another_queues_batch_is_not_found(client: Client) -> None:
    """The change, delete and history pages of another queue's batch answer 404, as for a batch that does not
    exist, without its label or completion message; the user's own batch opens."""
    mine, theirs = two_queues_batches()
    client = greeter(client)
    for page in ("change", "delete", "history"):
        response = client.get(f"/admin/nexus_queues/batch/{theirs}/{page}/")
        assert response.status_code == 404, page
        assert b"secret-stock" not in response.content and b"tally" not in response.content
        assert client.get(f"/admin/nexus_queues/batch/{theirs + mine + 1000}/{page}/").status_code == 404
    own = client.get(f"/admin/nexus_queues/batch/{mine}/change/")
    assert own.status_code == 200 and b"greetings-label" in own.content


def test_batch_admin__a_superuser_sees_every_queues_batches(admin_client: Client) -> None:
    mine, theirs = two_queues_batches()
    response = admin_client.get("/admin/nexus_queues/batch/")
    assert {b.pk for b in response.context["cl"].result_list} == {mine, theirs}
    assert admin_client.get(f"/admin/nexus_queues/batch/{theirs}/change/").status_code == 200


def test_dashboard__lists_only_the_batches_of_queues_the_user_may_view(client: Client) -> None:
    mine, _ = two_queues_batches()
    response = greeter(client).get("/admin/nexus_queues/dashboard/")
    assert [batch.pk for batch, _ in response.context["batches"]] == [mine]
    assert "secret-stock" not in response.content.decode()


def retired_batch() -> Batch:
    """A batch of a queue no longer defined: its class was removed, its batches left."""
    now = timezone.now()
    return Batch.objects.create(queue="retired", label="left-behind", total=3, created_at=now, counted_at=now)


def test_batch_admin__a_retired_queues_batch_is_the_superusers_alone(admin_client: Client, client: Client) -> None:
    """No permission names a queue no longer defined: a user who may view every queue does not see its batch, which
    answers 404 for them; the superuser sees it and may delete it."""
    retired = retired_batch()
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    client.force_login(viewer)
    assert list(client.get("/admin/nexus_queues/batch/").context["cl"].result_list) == []
    assert client.get(f"/admin/nexus_queues/batch/{retired.pk}/change/").status_code == 404
    assert [b.pk for b in admin_client.get("/admin/nexus_queues/batch/").context["cl"].result_list] == [retired.pk]
    assert admin_client.get(f"/admin/nexus_queues/batch/{retired.pk}/delete/").status_code == 200


def test_batch_admin__change_permission_on_a_queue_shows_its_batches(client: Client) -> None:
    """Change implies view, as on the queue's own pages."""
    _, stock = two_queues_batches()
    user = User.objects.create_user("stocker", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_batch", "change_inventoryqueueitem"]))
    client.force_login(user)
    assert [b.pk for b in client.get("/admin/nexus_queues/batch/").context["cl"].result_list] == [stock]
