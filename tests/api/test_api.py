"""The HTTP API under /nexus/: every endpoint's answers, its errors, and who may call it."""

import io
import json
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nexus_queues import Status, enqueue_many, lease
from nexus_queues.api.tokens import make_token
from tests.api_client import Api, make_user, stored
from tests.factories import GreetingFactory, InventoryFactory, ProductFactory
from tests.testapp.queues import Audit, Greeting, Inventory, Product

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    """Basic auth checks the password on every request; a fast hasher keeps the suite quick."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def admin():
    return Api(make_user("root", superuser=True))


# --- enqueue ---------------------------------------------------------------------------


def test_enqueue__one_object_is_stored_pending(admin):
    """A JSON object is one message; the answer says it was stored."""
    response = admin.post("queues/greetings", {"name": "Ada"})
    assert response.status_code == 201
    [row] = stored(Greeting)
    assert response.json() == {"stored": [{"index": 0, "message_id": None, "id": row.pk}], "discarded": [],
                               "superseded": []}
    assert row.message == Greeting(name="Ada") and row.status == Status.PENDING


def test_enqueue__array_is_one_batch(admin):
    """A JSON array stores every message, each reported by its position in the request."""
    response = admin.post("queues/greetings", [{"name": "a"}, {"name": "b", "times": 2}])
    assert response.status_code == 201
    assert [p["index"] for p in response.json()["stored"]] == [0, 1]
    assert [row.message.name for row in stored(Greeting)] == ["a", "b"]


def test_enqueue__idempotent_duplicate_is_discarded(admin):
    """An idempotent queue reports a message equal to the stored one as discarded."""
    product = {"sku": "A1", "name": "Chair"}
    admin.post("queues/products", product)
    response = admin.post("queues/products", product)
    assert response.json() == {"stored": [], "discarded": [{"index": 0, "message_id": "A1", "id": None}],
                               "superseded": []}
    assert len(stored(Product)) == 1


def test_enqueue__later_version_in_batch_supersedes_earlier(admin):
    """Two versions of one id in a request: the last is stored, the first superseded."""
    response = admin.post("queues/inventory", [{"sku": "S", "quantity": 1}, {"sku": "S", "quantity": 2}])
    assert response.json()["stored"] == [{"index": 1, "message_id": "S", "id": stored(Inventory)[0].pk}]
    assert response.json()["superseded"] == [{"index": 0, "message_id": "S", "id": None}]
    assert [row.message.quantity for row in stored(Inventory)] == [2]


@pytest.mark.parametrize("delay", ["PT1H", "3600", "3600.5"])
def test_enqueue__delay_makes_it_sleeping(admin, delay):
    """delay (seconds or ISO 8601) schedules the message: Sleeping until then."""
    before = timezone.now()
    assert admin.post("queues/greetings", {"name": "later"}, f"?delay={delay}").status_code == 201
    [row] = stored(Greeting)
    assert row.status == Status.SLEEPING
    assert before + timedelta(hours=1) <= row.process_at <= timezone.now() + timedelta(hours=1, seconds=1)


def test_enqueue__at_makes_it_sleeping_until_then(admin):
    at = "2040-01-02T03:04:05Z"
    assert admin.post("queues/greetings", {"name": "x"}, f"?at={at}&start_processing=true").status_code == 201
    [row] = stored(Greeting)
    assert row.status == Status.SLEEPING and row.process_at.isoformat().startswith("2040-01-02T03:04:05")


def test_enqueue__expires_at_is_stored(admin):
    assert admin.post("queues/greetings", {"name": "x"}, "?expires_at=2040-01-01T00:00:00Z").status_code == 201
    assert stored(Greeting)[0].expires_at.year == 2040


def test_enqueue__status_is_used(admin):
    assert admin.post("queues/greetings", {"name": "x"}, "?status=OnHold").status_code == 201
    assert stored(Greeting)[0].status == "OnHold"


def test_enqueue__queue_default_status_applies(admin):
    """Without a status the queue's default enqueue status applies (audits start OnHold)."""
    admin.post("queues/audits", {"event": "login"})
    assert stored(Audit)[0].status == "OnHold"


def test_enqueue__invalid_message_names_field_and_stores_nothing(admin):
    """One bad message in an array fails the request, naming its index and field; none is stored."""
    response = admin.post("queues/greetings", [{"name": "ok"}, {"nme": "typo"}, {"name": "x", "times": "many"}])
    assert response.status_code == 422
    locs = [error["loc"] for error in response.json()["detail"]]
    assert locs == [["body", 1, "name"], ["body", 1, "nme"], ["body", 2, "times"]]
    assert stored(Greeting) == []


def test_enqueue__empty_message_id_is_422(admin):
    response = admin.post("queues/products", {"sku": "", "name": "x"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "message_id"]
    assert stored(Product) == []


@pytest.mark.parametrize("body", ['{"name": ', "not json", b"\xff\xfe"])
def test_enqueue__malformed_json_is_400(admin, body):
    response = admin.post("queues/greetings", body)
    assert response.status_code == 400 and "Malformed JSON" in response.json()["detail"]
    assert stored(Greeting) == []


@pytest.mark.parametrize("body", ['"text"', "5", "null"])
def test_enqueue__body_neither_object_nor_array_is_422(admin, body):
    response = admin.post("queues/greetings", body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body"]


def test_enqueue__unknown_queue_is_404(admin):
    response = admin.post("queues/nope", {"name": "x"})
    assert response.status_code == 404 and response.json() == {"detail": "No queue named 'nope'."}


def test_enqueue__too_large_body_is_413(admin, settings):
    """Bodies above NEXUS_QUEUES["API_MAX_BODY_BYTES"] are refused before they are read."""
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "API_MAX_BODY_BYTES": 100}
    response = admin.post("queues/greetings", [{"name": "x" * 20}] * 5)
    assert response.status_code == 413 and "100 bytes" in response.json()["detail"]
    assert stored(Greeting) == []


@pytest.mark.parametrize(
    ("query", "loc"),
    [("?status=Leased", ["query", "status"]), ("?status=bad!", ["query", "status"]),
     ("?delay=soon", ["query", "delay"])],
)
def test_enqueue__bad_option_is_422(admin, query, loc):
    response = admin.post("queues/greetings", {"name": "x"}, query)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc
    assert stored(Greeting) == []


@pytest.mark.parametrize(
    ("query", "words"),
    [("?at=2040-01-01T00:00:00", "timezone-aware"), ("?at=2040-01-01T00:00:00Z&status=OnHold", "not both"),
     ("?delay=-5", "non-negative"), ("?delay=-PT5S", "non-negative")],
)
def test_enqueue__conflicting_schedule_is_422(admin, query, words):
    response = admin.post("queues/greetings", {"name": "x"}, query)
    assert response.status_code == 422 and words in response.json()["detail"][0]["msg"]
    assert stored(Greeting) == []


# --- queues ----------------------------------------------------------------------------


def test_list_queues__counts_per_status_and_health(admin):
    """Each queue shows its count per status (built-ins always, custom ones when present) and health."""
    enqueue_many(GreetingFactory.build_batch(3))
    Greeting.queue_model.objects.filter(pk__in=[r.pk for r in stored(Greeting)[:2]]).update(status="Error")
    Greeting.queue_model.objects.filter(pk=stored(Greeting)[2].pk).update(status="Parked")
    queues = {q["name"]: q for q in admin.get("queues").json()}
    assert set(queues) == {"audits", "greetings", "inventory", "pings", "products"}
    greetings = queues["greetings"]
    assert greetings["counts"]["Error"] == 2 and greetings["counts"]["Parked"] == 1
    assert greetings["counts"]["Pending"] == 0 and greetings["category"] == "Tests"
    assert greetings["health"] == {"status": "unhealthy", "reasons": ["2 message(s) in Error or Abandoned"]}
    assert queues["pings"]["health"]["status"] == "healthy"
    assert queues["products"]["idempotent"] and queues["products"]["has_identity"]


def test_get_queue__one_queue(admin):
    body = admin.get("queues/audits").json()
    assert body["name"] == "audits" and body["default_status"] == "OnHold" and body["processing_enabled"] is True


def test_get_queue__unknown_is_404(admin):
    assert admin.get("queues/nope").status_code == 404


def test_settings__default_status_changes_new_messages(admin):
    """Setting the default enqueue status makes new messages take it."""
    response = admin.patch("queues/greetings/settings", {"default_status": "Paused"})
    assert response.json() == {"default_status": "Paused", "processing_enabled": True}
    admin.post("queues/greetings", {"name": "x"})
    assert stored(Greeting)[0].status == "Paused"
    assert admin.get("queues/greetings/settings").json()["default_status"] == "Paused"


def test_settings__processing_off_keeps_class_default_status(admin):
    """Turning processing off stores it without overriding the queue's own default status."""
    response = admin.patch("queues/audits/settings", {"processing_enabled": False})
    assert response.json() == {"default_status": "OnHold", "processing_enabled": False}
    assert admin.patch("queues/audits/settings", {"processing_enabled": True}).json()["processing_enabled"] is True


@pytest.mark.parametrize(
    ("body", "loc"),
    [({"default_status": "Leased"}, ["body", "default_status"]),
     ({"default_status": "pending"}, ["body", "default_status"]),
     ({"processing": False}, ["body", "processing"])],
)
def test_settings__bad_change_is_422(admin, body, loc):
    response = admin.patch("queues/greetings/settings", body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc
    assert admin.get("queues/greetings/settings").json()["default_status"] == "Pending"


# --- messages --------------------------------------------------------------------------


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
    enqueue_many(GreetingFactory.build_batch(3))
    Greeting.queue_model.objects.filter(pk=stored(Greeting)[1].pk).update(status="Error")
    items = admin.get("queues/greetings/messages", status="Error").json()["items"]
    assert [m["id"] for m in items] == [stored(Greeting)[1].pk] and items[0]["status"] == "Error"


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
    enqueue_many([InventoryFactory(sku="S", quantity=3)])
    [item] = lease(Inventory, 1)
    item.mark_error(ValueError("boom"))
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
    assert {"$ref": "#/components/schemas/queue.greetings"} in body["anyOf"][1]["oneOf"]


# --- who may call it -------------------------------------------------------------------

ENDPOINTS = [
    ("get", "queues", None), ("get", "queues/greetings", None), ("post", "queues/greetings", {"name": "x"}),
    ("get", "queues/greetings/messages", None), ("get", "queues/greetings/messages/1", None),
    ("post", "queues/greetings/messages/1/status", {"status": "Pending"}),
    ("post", "queues/greetings/status", {"status": "Pending", "filter": {}}),
    ("get", "queues/greetings/settings", None), ("patch", "queues/greetings/settings", {"processing_enabled": False}),
]


def call(api, method, path, body):
    return api.get(path) if method == "get" else api.send(method, path, body)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_auth__anonymous_gets_401_and_nothing_else(method, path, body):
    """Without credentials every endpoint answers 401 and says nothing about queues or messages."""
    enqueue_many([GreetingFactory(name="secret")])
    response = call(Api(), method, path, body)
    assert response.status_code == 401 and response.json() == {"detail": "Unauthorized"}
    assert [row.status for row in stored(Greeting)] == [Status.PENDING] and len(stored(Greeting)) == 1


def test_auth__unknown_queue_is_401_for_anonymous():
    """Anonymous callers cannot probe which queues exist."""
    assert Api().get("queues/nope").status_code == 401


def test_auth__wrong_password_is_401():
    """Bad Basic credentials are 401 even where a browser's write would need a CSRF token."""
    user = make_user("svc", "add_greetingqueueitem")
    api = Api(user, password="wrong")
    api.client = Client(enforce_csrf_checks=True)
    response = api.post("queues/greetings", {"name": "x"})
    assert response.status_code == 401 and stored(Greeting) == []


def test_auth__basic_write_needs_no_csrf_token():
    api = Api(make_user("svc", "add_greetingqueueitem"))
    api.client = Client(enforce_csrf_checks=True)
    assert api.post("queues/greetings", {"name": "x"}).status_code == 201


def test_auth__anonymous_write_is_401_with_csrf_enforced():
    response = Client(enforce_csrf_checks=True).post("/nexus/queues/greetings", "{}", content_type="application/json")
    assert response.status_code == 401 and stored(Greeting) == []


def test_auth__inactive_user_is_401():
    user = make_user("gone", "view_greetingqueueitem")
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert Api(user).get("queues/greetings").status_code == 401


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS[1:])
def test_auth__user_without_permissions_gets_403(method, path, body):
    enqueue_many([GreetingFactory()])
    response = call(Api(make_user("nobody")), method, path, body)
    assert response.status_code == 403
    assert len(stored(Greeting)) == 1 and stored(Greeting)[0].status == Status.PENDING


def test_auth__queue_list_shows_only_viewable_queues():
    api = Api(make_user("viewer", "view_greetingqueueitem", "view_pingqueueitem"))
    assert [q["name"] for q in api.get("queues").json()] == ["greetings", "pings"]
    assert Api(make_user("nobody")).get("queues").json() == []


def test_auth__viewer_reads_but_cannot_add_or_change():
    enqueue_many([GreetingFactory()])
    pk = stored(Greeting)[0].pk
    api = Api(make_user("viewer", "view_greetingqueueitem"))
    assert api.get("queues/greetings/messages").status_code == 200
    assert api.get(f"queues/greetings/messages/{pk}").status_code == 200
    assert api.get("queues/greetings/settings").status_code == 200
    assert api.post("queues/greetings", {"name": "x"}).status_code == 403
    assert api.post(f"queues/greetings/messages/{pk}/status", {"status": "Parked"}).status_code == 403
    assert api.patch("queues/greetings/settings", {"processing_enabled": False}).status_code == 403
    assert api.get("queues/products/messages").status_code == 403
    assert len(stored(Greeting)) == 1 and stored(Greeting)[0].status == Status.PENDING


def test_auth__adder_enqueues_but_cannot_read():
    api = Api(make_user("service", "add_greetingqueueitem"))
    assert api.post("queues/greetings", {"name": "x"}).status_code == 201
    assert api.get("queues/greetings/messages").status_code == 403
    assert api.post("queues/products", {"sku": "A", "name": "x"}).status_code == 403
    assert len(stored(Greeting)) == 1 and stored(Product) == []


def test_auth__changer_changes_status_and_settings():
    enqueue_many([GreetingFactory()])
    pk = stored(Greeting)[0].pk
    api = Api(make_user("operator", "change_greetingqueueitem"))
    assert api.post(f"queues/greetings/messages/{pk}/status", {"status": "Parked"}).status_code == 200
    assert api.post("queues/greetings/status", {"status": "Pending", "ids": [pk]}).status_code == 200
    assert api.patch("queues/greetings/settings", {"default_status": "Paused"}).status_code == 200
    assert api.post("queues/greetings", {"name": "x"}).status_code == 403


def test_auth__session_user_reads():
    """A user logged in to Django (the admin's session) may call the API from the browser."""
    client = Client()
    client.force_login(make_user("viewer", "view_greetingqueueitem"))
    assert client.get("/nexus/queues/greetings").status_code == 200


def test_auth__session_write_needs_csrf_token():
    """Session-authenticated writes without the CSRF token are refused; with it they pass."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("service", "add_greetingqueueitem"))
    body = json.dumps({"name": "x"})
    refused = client.post("/nexus/queues/greetings", body, content_type="application/json")
    assert refused.status_code == 403 and stored(Greeting) == []
    token = "a" * 32
    client.cookies["csrftoken"] = token
    accepted = client.post("/nexus/queues/greetings", body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201 and len(stored(Greeting)) == 1


# --- tokens ----------------------------------------------------------------------------


def token_client(token):
    return Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_token__authenticates_as_its_user():
    """A token from nexus_api_token acts as its user, with that user's permissions, and needs no CSRF token."""
    out = io.StringIO()
    make_user("svc", "add_greetingqueueitem")
    call_command("nexus_api_token", "svc", stdout=out)
    client = token_client(out.getvalue().strip())
    assert client.post("/nexus/queues/greetings", '{"name": "x"}', content_type="application/json").status_code == 201
    assert client.get("/nexus/queues/greetings/messages").status_code == 403
    assert len(stored(Greeting)) == 1


def test_token__password_change_revokes_it():
    user = make_user("svc", "view_greetingqueueitem")
    token = make_token(user)
    assert token_client(token).get("/nexus/queues/greetings").status_code == 200
    user.set_password("new-password")
    user.save()
    assert token_client(token).get("/nexus/queues/greetings").status_code == 401


def test_token__inactive_user_is_refused():
    user = make_user("svc", "view_greetingqueueitem")
    token = make_token(user)
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert token_client(token).get("/nexus/queues/greetings").status_code == 401


@pytest.mark.parametrize("change", [lambda t: t[:-2] + "xx", lambda t: "garbage", lambda t: t.replace(":", ";", 1)])
def test_token__forged_is_401(change):
    token = make_token(make_user("svc", "view_greetingqueueitem"))
    assert token_client(change(token)).get("/nexus/queues/greetings").status_code == 401


def test_token__expires_after_max_age(settings):
    token = make_token(make_user("svc", "view_greetingqueueitem"))
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "API_TOKEN_MAX_AGE": timedelta(hours=1)}
    assert token_client(token).get("/nexus/queues/greetings").status_code == 200
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "API_TOKEN_MAX_AGE": timedelta(seconds=-1)}
    assert token_client(token).get("/nexus/queues/greetings").status_code == 401


@pytest.mark.parametrize(("username", "words"), [("nobody", "No user"), ("gone", "inactive")])
def test_token_command__refuses_unknown_or_inactive_user(username, words):
    User.objects.create_user("gone", is_active=False)
    with pytest.raises(CommandError, match=words):
        call_command("nexus_api_token", username)


@pytest.mark.django_db(transaction=True)
def test_http__enqueue_and_read_over_a_socket(live_server):
    """A service enqueues and reads back over real HTTP, with a token."""
    token = make_token(make_user("svc", "add_greetingqueueitem", "view_greetingqueueitem"))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    post = urllib.request.Request(
        f"{live_server.url}/nexus/queues/greetings", data=b'[{"name": "a"}, {"name": "b"}]', headers=headers
    )
    with urllib.request.urlopen(post, timeout=10) as response:
        assert response.status == 201 and len(json.load(response)["stored"]) == 2
    read = urllib.request.Request(f"{live_server.url}/nexus/queues/greetings/messages", headers=headers)
    with urllib.request.urlopen(read, timeout=10) as response:
        assert [m["message"]["name"] for m in json.load(response)["items"]] == ["a", "b"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{live_server.url}/nexus/queues/greetings/messages", timeout=10)
    refused.value.close()
    assert refused.value.code == 401
