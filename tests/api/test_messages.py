"""The message endpoints: pages, filters, one message, status changes one by one or by filter, the OpenAPI schema."""

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from nexus_queues import Status, enqueue_many
from tests.api_client import stored
from tests.factories import ErrorFactory, GreetingFactory, InventoryFactory, PendingFactory, ProductFactory
from tests.testapp.queues import Greeting, Inventory

pytestmark = pytest.mark.django_db


def test_list_messages__cursor_pages_in_id_order(admin):
    """Pages follow ids: next_cursor leads to the next page, None after the last."""
    enqueue_many(GreetingFactory.build_batch(5))
    ids = [row.pk for row in stored(Greeting)]
    first = admin.get("queues/greetings/messages", limit=2).json()
    second = admin.get("queues/greetings/messages", limit=2, cursor=first["next_cursor"]).json()
    third = admin.get("queues/greetings/messages", limit=2, cursor=second["next_cursor"]).json()
    assert [m["id"] for m in first["items"] + second["items"] + third["items"]] == ids
    assert third["next_cursor"] is None


def queries(call):
    with CaptureQueriesContext(connection) as captured:
        assert call().status_code == 200
    return len(captured)


def test_list_messages__queries_do_not_grow_with_the_page(admin):
    """A page of 50 messages costs the same statements as a page of 5."""
    enqueue_many(GreetingFactory.build_batch(50))
    small = queries(lambda: admin.get("queues/greetings/messages", limit=5))
    assert queries(lambda: admin.get("queues/greetings/messages", limit=50)) == small


def test_list_queues__queries_do_not_grow_with_messages(admin):
    """Counts and health come from aggregate queries, not from rows."""
    enqueue_many(GreetingFactory.build_batch(2))
    few = queries(lambda: admin.get("queues"))
    enqueue_many(GreetingFactory.build_batch(100))
    assert queries(lambda: admin.get("queues")) == few


def test_list_messages__stable_under_inserts(admin):
    """Messages enqueued between pages come after, never shifting or repeating what was seen."""
    enqueue_many(GreetingFactory.build_batch(4))
    first = admin.get("queues/greetings/messages", limit=2).json()
    enqueue_many(GreetingFactory.build_batch(2))
    rest = admin.get("queues/greetings/messages", limit=10, cursor=first["next_cursor"]).json()
    seen = [m["id"] for m in first["items"] + rest["items"]]
    assert seen == [row.pk for row in stored(Greeting)] and len(set(seen)) == 6


def test_list_messages__status_filter(admin):
    PendingFactory.create(queue=Greeting)
    failed = ErrorFactory.create(queue=Greeting)
    PendingFactory.create(queue=Greeting)
    items = admin.get("queues/greetings/messages", status="Error").json()["items"]
    assert [m["id"] for m in items] == [failed.pk] and items[0]["status"] == "Error"


def test_list_messages__property_filters(admin):
    """Filters compare message properties, nested ones by dotted path, with eq/gt/gte/lt/lte/isnull."""
    enqueue_many([InventoryFactory(sku=f"S{n}", quantity=n) for n in range(5)])
    enqueue_many([ProductFactory(sku="P1"), ProductFactory(sku="P2", prices=[])])

    def matching(queue, filters):
        items = admin.get(f"queues/{queue}/messages", filter=json.dumps(filters)).json()["items"]
        return [m["message_id"] for m in items]

    assert matching("inventory", {"quantity__gte": 3}) == ["S3", "S4"]
    assert matching("inventory", {"sku": "S1"}) == ["S1"]
    assert matching("inventory", {"quantity__lt": 2, "sku": "S1"}) == ["S1"]
    assert matching("products", {"prices.0.currency": "EUR"}) == ["P1"]
    assert matching("products", {"prices.0__isnull": True}) == ["P2"]


@pytest.mark.parametrize(
    ("params", "loc"),
    [({"filter": "{bad"}, ["query", "filter"]), ({"filter": '{"sku__like": "x"}'}, ["query", "filter", "sku__like"]),
     ({"filter": '{"a__b.c": 1}'}, ["query", "filter", "a__b.c"]),
     ({"filter": '{"contains": 1}'}, ["query", "filter", "contains"]),
     ({"filter": '{"sku": [1]}'}, ["query", "filter", "sku"]), ({"filter": "[1]"}, ["query", "filter"]),
     ({"status": "no!"}, ["query", "status"]), ({"limit": 0}, ["query", "limit"]),
     ({"cursor": -1}, ["query", "cursor"])],
)
def test_list_messages__bad_query_is_422(admin, params, loc):
    response = admin.get("queues/inventory/messages", **params)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc


def test_get_message__everything_about_it(admin):
    item = ErrorFactory.create(
        queue=Inventory, message=InventoryFactory(sku="S", quantity=3), error_message="boom",
        error_traceback="Traceback (most recent call last):\nValueError: boom\n",
    )
    body = admin.get(f"queues/inventory/messages/{item.pk}").json()
    assert body["message"] == {"sku": "S", "quantity": 3} and body["message_id"] == "S"
    assert body["status"] == "Error" and body["error_type"] == "builtins.ValueError" and body["attempts"] == 1
    assert body["correlation_id"] == item.correlation_id and "boom" in body["error_traceback"]


def test_get_message__shows_json_that_no_longer_fits_its_class(admin):
    """A stored message that fails its class's validation is still shown, as stored."""
    enqueue_many([GreetingFactory()])
    Greeting.queue_model.objects.update(message={"renamed": 1})
    response = admin.get(f"queues/greetings/messages/{stored(Greeting)[0].pk}")
    assert response.status_code == 200 and response.json()["message"] == {"renamed": 1}


@pytest.mark.parametrize(("path", "code"), [("999", 404), ("abc", 422), ("0", 422)])
def test_get_message__unknown_or_bad_id(admin, path, code):
    response = admin.get(f"queues/greetings/messages/{path}")
    assert response.status_code == code
    if code == 404:
        assert response.json() == {"detail": "No message 999 in queue 'greetings'."}


def test_set_message_status__changes_one(admin):
    enqueue_many(GreetingFactory.build_batch(2))
    first, _ = stored(Greeting)
    response = admin.post(f"queues/greetings/messages/{first.pk}/status", {"status": "Parked"})
    assert response.status_code == 200 and response.json()["status"] == "Parked"
    assert [row.status for row in stored(Greeting)] == ["Parked", "Pending"]


def test_set_message_status__unknown_message_is_404(admin):
    assert admin.post("queues/greetings/messages/999/status", {"status": "Pending"}).status_code == 404


@pytest.mark.parametrize("body", [{"status": "Leased"}, {"status": "Sleeping"}, {"status": " x"}, {"status": 5}, {}])
def test_set_message_status__bad_status_is_422(admin, body):
    enqueue_many([GreetingFactory()])
    response = admin.post(f"queues/greetings/messages/{stored(Greeting)[0].pk}/status", body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "status"]
    assert stored(Greeting)[0].status == Status.PENDING


def test_set_status__by_ids(admin):
    enqueue_many(GreetingFactory.build_batch(3))
    rows = stored(Greeting)
    response = admin.post("queues/greetings/status", {"status": "Parked", "ids": [rows[0].pk, rows[2].pk, 999]})
    assert response.json() == {"changed": 2}
    assert [row.status for row in stored(Greeting)] == ["Parked", "Pending", "Parked"]


def test_set_status__by_current_status_and_filter(admin):
    """Every message in current_status matching the property filter changes; others stay."""
    enqueue_many([InventoryFactory(sku=f"S{n}", quantity=n) for n in range(4)])
    Inventory.queue_model.objects.filter(message__quantity__gte=1).update(status="Error")
    body = {"status": "Pending", "current_status": "Error", "filter": {"quantity__lte": 2}}
    assert admin.post("queues/inventory/status", body).json() == {"changed": 2}
    assert [row.status for row in stored(Inventory)] == ["Pending", "Pending", "Pending", "Error"]


def test_set_status__empty_filter_matches_all(admin):
    enqueue_many(GreetingFactory.build_batch(2))
    assert admin.post("queues/greetings/status", {"status": "Parked", "filter": {}}).json() == {"changed": 2}


@pytest.mark.parametrize(
    "body",
    [{"status": "Pending"}, {"status": "Pending", "ids": [1], "filter": {}}, {"status": "Pending", "ids": ["x"]},
     {"status": "Pending", "ids": [0]}, {"status": "Leased", "ids": [1]},
     {"status": "Pending", "current_status": "no!"},
     {"status": "Pending", "filter": {"a": {"b": 1}}}],
)
def test_set_status__bad_body_is_422(admin, body):
    enqueue_many([GreetingFactory()])
    response = admin.post("queues/greetings/status", body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"][0] == "body"
    assert stored(Greeting)[0].status == Status.PENDING


def test_set_status__bad_filter_key_is_422(admin):
    response = admin.post("queues/greetings/status", {"status": "Pending", "filter": {"name__regex": "x"}})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "filter", "name__regex"]


def test_status_change__malformed_json_is_400(admin):
    response = admin.post("queues/greetings/status", '{"status": ')
    assert response.status_code == 400 and "Malformed JSON" in response.json()["detail"]


def test_openapi__describes_every_queue_body(admin):
    """The app serves its OpenAPI description, with each queue's message schema."""
    schema = Client().get("/nexus/openapi.json").json()
    assert "/nexus/queues/{name}" in schema["paths"]
    assert {"queue.greetings", "queue.products", "Price"} <= set(schema["components"]["schemas"])
    body = schema["paths"]["/nexus/queues/{name}"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    greetings = {"$ref": "#/components/schemas/queue.greetings"}
    assert {"oneOf": [greetings, {"type": "array", "items": greetings}]} in body["anyOf"]


def test_openapi__error_fields_are_the_last_error(admin):
    """The message schema says its error fields hold the last failed attempt's error, current only while Error."""
    schema = Client().get("/nexus/openapi.json").json()
    fields = schema["components"]["schemas"]["Message"]["properties"]
    for name in ("error_type", "error_message", "error_traceback"):
        assert fields[name]["description"].startswith("The last failed attempt's")
        assert "The current error only while status is Error" in fields[name]["description"]
