"""Enqueue answers give the row id of each stored message, so a client can find what it stored."""

import pytest

from tests.api_client import Api, make_user, stored
from tests.testapp.queues import Greeting, Product

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    return Api(make_user("root", superuser=True), token=True)


def test_enqueue__one_message_answer_gives_its_row_id(api):
    """A message without a message id is found again by the row id in the answer."""
    response = api.post("queues/greetings", {"name": "Ada"})
    [row] = stored(Greeting)
    assert response.json()["stored"] == [{"index": 0, "message_id": None, "id": row.pk}]
    assert api.get(f"queues/greetings/messages/{row.pk}").json()["message"] == {"name": "Ada", "times": 1}


def test_enqueue__array_answer_gives_row_ids_in_request_order(api):
    """Each message of a batch gets its row's id, in the order of the request (FIFO)."""
    api.post("queues/greetings", {"name": "first"})
    response = api.post("queues/greetings", [{"name": "a"}, {"name": "b"}, {"name": "c"}])
    rows = stored(Greeting)[1:]
    assert [(p["index"], p["id"]) for p in response.json()["stored"]] == [(i, row.pk) for i, row in enumerate(rows)]
    assert [row.message.name for row in rows] == ["a", "b", "c"]


def test_enqueue__identity_answer_gives_ids_of_stored_messages(api):
    """With identity, stored messages carry their row id; discarded and superseded ones carry none."""
    api.post("queues/products", {"sku": "A", "name": "x"})
    body = [{"sku": "B", "name": "1"}, {"sku": "A", "name": "x"}, {"sku": "B", "name": "2"}]
    response = api.post("queues/products", body)
    ids = {row.message_id: row.pk for row in stored(Product)}
    assert response.json() == {
        "stored": [{"index": 2, "message_id": "B", "id": ids["B"]}],
        "discarded": [{"index": 1, "message_id": "A", "id": None}],
        "superseded": [{"index": 0, "message_id": "B", "id": None}],
    }
