"""POST queues/{name}/cancel: the Pending, Sleeping and Leased messages among the ids become Cancelled."""

import pytest

from nexus_queues import Status
from tests.api_client import Api, make_user
from tests.factories import LeasedFactory, PendingFactory, ProcessedFactory, SleepingFactory
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db


def statuses() -> dict[int, str]:
    return dict(Greeting.queue_items().values_list("pk", "status"))


def test_cancel__answers_the_ids_cancelled(admin):
    """Pending, Sleeping and Leased ids are cancelled and listed; a Processed one and a missing one are not."""
    rows = [PendingFactory(), SleepingFactory(), LeasedFactory(), ProcessedFactory()]
    ids = [row.pk for row in rows]
    response = admin.post("queues/greetings/cancel", {"ids": [*ids, 999_999]})
    assert response.status_code == 200, response.content
    assert response.json() == {"cancelled": ids[:3]}
    assert list(statuses().values()) == [Status.CANCELLED] * 3 + [Status.PROCESSED]


@pytest.mark.parametrize("body", [{}, {"ids": []}, {"ids": [0]}, {"ids": ["x"]}, {"ids": [1], "status": "x"}])
def test_cancel__bad_body_is_422(admin, body):
    """A body without ids, with an id that is not a row id, or with an unknown key, is refused naming it."""
    PendingFactory()
    response = admin.post("queues/greetings/cancel", body)
    assert response.status_code == 422, response.content
    assert list(statuses().values()) == [Status.PENDING]


def test_cancel__needs_change_permission():
    """A user who may only view the queue cannot cancel its messages."""
    row = PendingFactory()
    viewer = Api(make_user("viewer", "view_greetingqueueitem"))
    assert viewer.post("queues/greetings/cancel", {"ids": [row.pk]}).status_code == 403
    assert statuses() == {row.pk: Status.PENDING}
