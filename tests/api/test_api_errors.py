"""Bad input to the API gets a 4xx naming the problem and leaves stored rows as they were, on every engine."""

import base64
import json

import pytest

from nexus_queues import Status, enqueue_many
from nexus_queues.api.filters import MAX_FILTER_KEYS, MAX_FILTER_PATH
from tests.api_client import Api, make_user, stored
from tests.factories import GreetingFactory, InventoryFactory
from tests.testapp.queues import Greeting, Inventory

pytestmark = pytest.mark.django_db

# JSON Python's json module reads (NaN, inf, lone surrogates) or chokes on (depth), and text no engine stores.
NOT_STRICT = {
    "NaN": ('{"quantity": NaN}', "NaN"),
    "-Infinity": ('{"quantity": -Infinity}', "Infinity"),
    "1e400": ('{"quantity": 1e400}', "out of range"),
    "lone surrogate": ('{"sku": "\\ud800"}', "surrogate"),
    "NUL": ('{"sku": "a\\u0000b"}', "NUL"),
    "10,000 deep": ('{"sku": ' + "[" * 10_000 + "]" * 10_000 + "}", "nested too deeply"),
}


@pytest.fixture
def api():
    return Api(make_user("root", superuser=True), token=True)


@pytest.fixture
def errors():
    """Two inventory rows in Error, which a status change must leave alone."""
    enqueue_many(InventoryFactory.build_batch(2))
    Inventory.queue_model.objects.update(status=Status.ERROR)


@pytest.fixture
def root(settings):
    """A superuser for Basic auth, with a fast password hasher."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return make_user("root", superuser=True)


def statuses(message_class):
    return [row.status for row in stored(message_class)]


@pytest.mark.parametrize(("text", "words"), NOT_STRICT.values(), ids=NOT_STRICT)
def test_list_messages__filter_not_storable_json_is_422(api, errors, text, words):
    """A list filter that is not strict JSON, or holds text no engine stores, is refused naming why."""
    response = api.get("queues/inventory/messages", filter=text)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["query", "filter"] and words in error["msg"]


@pytest.mark.parametrize(("text", "words"), NOT_STRICT.values(), ids=NOT_STRICT)
def test_set_status__filter_not_storable_json_is_400_and_changes_nothing(api, errors, text, words):
    """The same filters in a status change's body: 400 naming why, and no row changes."""
    response = api.post("queues/inventory/status", f'{{"status": "Pending", "filter": {text}}}')
    assert response.status_code == 400
    assert response.json()["detail"].startswith("Malformed JSON body: ") and words in response.json()["detail"]
    assert statuses(Inventory) == [Status.ERROR] * 2


@pytest.mark.parametrize(("text", "words"), NOT_STRICT.values(), ids=NOT_STRICT)
def test_enqueue__body_not_storable_json_is_400_and_stores_nothing(api, text, words):
    """A message that is not strict JSON, or holds text no engine stores, is refused before anything is stored."""
    body = text.replace('"sku"', '"name"').replace('"quantity"', '"times"')
    response = api.post("queues/greetings", f'[{{"name": "ok"}}, {body}]')
    assert response.status_code == 400 and words in response.json()["detail"]
    assert stored(Greeting) == []


def test_status_change__deep_body_says_why(api):
    """A body too deep to parse is a 400 that says so (ninja's own answer says only that it cannot parse)."""
    enqueue_many([GreetingFactory()])
    pk = stored(Greeting)[0].pk
    response = api.post(f"queues/greetings/messages/{pk}/status", "[" * 10_000 + "]" * 10_000)
    assert response.status_code == 400 and "nested too deeply" in response.json()["detail"]
    assert statuses(Greeting) == [Status.PENDING]


@pytest.mark.parametrize(
    ("filters", "words"),
    [({f"k{n}": n for n in range(MAX_FILTER_KEYS + 1)}, f"at most {MAX_FILTER_KEYS} properties"),
     ({".".join(["a"] * (MAX_FILTER_PATH + 1)): 1}, f"at most {MAX_FILTER_PATH} parts"),
     ({".".join(["a"] * 5_000): 1}, f"at most {MAX_FILTER_PATH} parts")],
    ids=["too many keys", "path one too long", "path of 5,000 parts"],
)
def test_filters__limits_are_422_naming_them(api, errors, filters, words):
    """Filters are capped in keys and path length (cost grows with both); the error names the limit."""
    listed = api.get("queues/inventory/messages", filter=json.dumps(filters))
    changed = api.post("queues/inventory/status", {"status": "Pending", "filter": filters})
    for response, loc in ((listed, ["query", "filter"]), (changed, ["body", "filter"])):
        assert response.status_code == 422
        [error] = response.json()["detail"]
        assert error["loc"][:2] == loc and words in error["msg"]
    assert statuses(Inventory) == [Status.ERROR] * 2


def test_filters__at_the_limits_work(api):
    """A filter with the most keys and the longest path allowed runs on every engine."""
    enqueue_many([InventoryFactory(sku="S", quantity=1)])
    deep = ".".join(["a"] * MAX_FILTER_PATH)
    filters = {"sku": "S", deep + "__isnull": True, **{f"k{n}__isnull": True for n in range(MAX_FILTER_KEYS - 2)}}
    response = api.get("queues/inventory/messages", filter=json.dumps(filters))
    assert response.status_code == 200 and [m["message_id"] for m in response.json()["items"]] == ["S"]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**400], ids=["2**63", "-2**63-1", "10**400"])
@pytest.mark.parametrize("operator", ["", "__gt"])
def test_filters__integer_beyond_64_bits_is_422(api, errors, operator, value):
    """Filter numbers are whole numbers of 64 bits at most, which every engine compares (SQLite overflowed)."""
    key = f"quantity{operator}"
    listed = api.get("queues/inventory/messages", filter=json.dumps({key: value}))
    changed = api.post("queues/inventory/status", {"status": "Pending", "filter": {key: value}})
    assert listed.status_code == changed.status_code == 422
    assert listed.json()["detail"][0]["loc"] == ["query", "filter", key]
    assert changed.json()["detail"][0]["loc"] == ["body", "filter", key]
    assert "64-bit" in listed.json()["detail"][0]["msg"]
    assert statuses(Inventory) == [Status.ERROR] * 2


def test_filters__64_bit_integers_compare(api):
    """The largest and smallest 64-bit integers compare on every engine."""
    enqueue_many([InventoryFactory(sku="S", quantity=5)])
    for filters, found in (({"quantity__lt": 2**63 - 1}, ["S"]), ({"quantity__lt": -(2**63)}, [])):
        response = api.get("queues/inventory/messages", filter=json.dumps(filters))
        assert [m["message_id"] for m in response.json()["items"]] == found


@pytest.mark.parametrize("key", ["sku\n", "sku\n__gte", "a.\nb"])
def test_filters__key_with_newline_is_422(api, key):
    """Property names are letters, digits and '_' only: a trailing newline does not slip through."""
    response = api.get("queues/inventory/messages", filter=json.dumps({key: "x"}))
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", "filter", key]


def test_filters__error_names_the_key(api):
    """A bad filter key is named in the error's location, under the field that held it."""
    listed = api.get("queues/inventory/messages", filter=json.dumps({"sku": "x", "name__like": "y"}))
    changed = api.post("queues/inventory/status", {"status": "Pending", "filter": {"name__like": "y"}})
    assert listed.json()["detail"][0]["loc"] == ["query", "filter", "name__like"]
    assert changed.json()["detail"][0]["loc"] == ["body", "filter", "name__like"]


@pytest.mark.parametrize(
    ("query", "field"),
    [("?delay=80000000000000", "delay"), ("?delay=P999999999D", "delay"),
     ("?at=9999-12-31T23:59:59-10:00", "at"), ("?expires_at=9999-12-31T23:59:59-10:00", "expires_at")],
)
def test_enqueue__times_past_year_9999_are_422(api, query, field):
    """Times the API would overflow computing (now + delay, a local time in UTC) are refused, naming the field."""
    response = api.post("queues/greetings", {"name": "x"}, query)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["query", field] and "9999" in error["msg"]
    assert stored(Greeting) == []


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [("queues/greetings/messages/{pk}/status", {"status": "Leased"}, ["body", "status"]),
     ("queues/greetings/messages/{pk}/status", {}, ["body", "status"]),
     ("queues/greetings/status", {"status": "Pending"}, ["body"]),
     ("queues/greetings/status", {"status": "Pending", "ids": ["x"]}, ["body", "ids", 0])],
)
def test_errors__locations_name_the_request_fields(api, path, body, loc):
    """Error locations name the body's own fields, not the view's parameter names."""
    enqueue_many([GreetingFactory()])
    response = api.post(path.format(pk=stored(Greeting)[0].pk), body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc
    assert statuses(Greeting) == [Status.PENDING]


def test_errors__settings_locations_name_the_request_fields(api):
    response = api.patch("queues/greetings/settings", {"default_status": "Leased"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "default_status"]


@pytest.mark.parametrize("credentials", ["ro\x00ot:secret-pw", "root:secret\x00pw"])
def test_auth__basic_credentials_with_nul_are_401(root, credentials):
    """Basic credentials holding NUL are wrong credentials (PostgreSQL cannot even look them up)."""
    api = Api()
    api.headers["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(credentials.encode()).decode()
    response = api.get("queues")
    assert response.status_code == 401


@pytest.mark.parametrize(
    "authorization", [None, "Basic " + base64.b64encode(b"root:wrong").decode(), "Bearer forged", "Digest x"]
)
def test_auth__401_names_the_schemes(root, authorization):
    """Every 401 says which schemes the API takes (RFC 9110 WWW-Authenticate)."""
    api = Api()
    if authorization:
        api.headers["HTTP_AUTHORIZATION"] = authorization
    response = api.get("queues")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="nexus_queues", Basic realm="nexus_queues", charset="UTF-8"'
