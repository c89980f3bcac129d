"""The admin's Cancel… action: a confirmation page counting the cancellable rows, then one cancel."""

import pytest
from django.test import Client

from nexus_queues import Status
from tests.factories import ErrorFactory, LeasedFactory, PendingFactory, SleepingFactory
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"


def post(client: Client, ids: list[int], **extra: str) -> object:
    data = {"action": "cancel_messages", "index": "0", "_selected_action": [str(i) for i in ids], **extra}
    return client.post(GREETINGS, data)


def statuses() -> list[str]:
    return list(Greeting.queue_items().order_by("pk").values_list("status", flat=True))


def test_cancel_action__confirms_with_the_cancellable_count(admin_client: Client) -> None:
    """The confirmation page counts only the Pending, Sleeping and Leased rows chosen, and changes nothing."""
    ids = [row.pk for row in (PendingFactory(), LeasedFactory(), ErrorFactory())]
    response = post(admin_client, ids)
    page = response.content.decode()
    assert "This cancels <strong>2</strong> messages." in page
    assert 'value="Cancel 2 messages"' in page
    assert statuses() == [Status.PENDING, Status.LEASED, Status.ERROR]


def test_cancel_action__applies(admin_client: Client) -> None:
    """Confirmed, the cancellable rows chosen become Cancelled; an Error row chosen and a row not chosen stay."""
    rows = [PendingFactory(), SleepingFactory(), LeasedFactory(), ErrorFactory(), PendingFactory()]
    response = post(admin_client, [row.pk for row in rows[:4]], apply="1")
    assert response.status_code == 302
    assert statuses() == [Status.CANCELLED] * 3 + [Status.ERROR, Status.PENDING]
    assert "3 message(s) cancelled." in admin_client.get(GREETINGS).content.decode()


def test_cancel_action__select_across_cancels_the_whole_filter_result(admin_client: Client) -> None:
    """With "select all", the rows matching the filter are cancelled, whichever were ticked."""
    rows = [PendingFactory(), PendingFactory(), ErrorFactory()]
    post(admin_client, [rows[0].pk], select_across="1", apply="1")
    assert statuses() == [Status.CANCELLED, Status.CANCELLED, Status.ERROR]
