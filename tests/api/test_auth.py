"""Who may call the API: anonymous, bad passwords, per-queue permissions, sessions and CSRF."""

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from nexus_queues import Status, enqueue_many
from tests.api_client import Api, make_user, stored
from tests.factories import GreetingFactory
from tests.testapp.queues import Greeting, Product

pytestmark = pytest.mark.django_db


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


def test_auth__changer_reads_as_in_the_admin():
    """Change implies view, as in Django's admin: a user who may change a queue reads it, its messages, batches and
    settings, and finds it in the list; other queues stay 403."""
    enqueue_many([GreetingFactory()])
    pk = stored(Greeting)[0].pk
    api = Api(make_user("operator", "change_greetingqueueitem"))
    for path in ("queues/greetings", "queues/greetings/messages", f"queues/greetings/messages/{pk}",
                 "queues/greetings/batches", "queues/greetings/settings"):
        assert api.get(path).status_code == 200, path
    assert [queue["name"] for queue in api.get("queues").json()] == ["greetings"]
    assert api.get("queues/products").status_code == 403


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
