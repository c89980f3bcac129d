"""POST /nexus/queues/{name} refuses what not every engine stores: 422 naming the problem, nothing stored."""

import base64
import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from nexus_queues.limits import MAX_JSON_DEPTH
from nexus_queues.registry import registry

pytestmark = pytest.mark.django_db


@pytest.fixture
def post(settings):
    """POST a raw JSON body to a queue as a superuser (HTTP Basic)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    User.objects.create_user("root", password="pw", is_superuser=True)
    auth = "Basic " + base64.b64encode(b"root:pw").decode()
    client = Client()

    def send(queue, body, query=""):
        return client.post(
            f"/nexus/queues/{queue}{query}", data=body, content_type="application/json", HTTP_AUTHORIZATION=auth
        )

    return send


def audit_nested(depth):
    """An audit whose details nest ``depth`` deep (the message itself one more)."""
    return '{"event": "e", "details": ' + '{"a": ' * (depth - 1) + "{}" + "}" * depth


# Not strict JSON (NaN, Infinity, 1e400, NUL, lone surrogates) never reaches the core through the API:
# the parser answers 400 first (tests/test_api_errors.py). These are strict JSON that no engine stores alike.
@pytest.mark.parametrize(
    ("queue", "body", "problem"),
    [
        ("audits", audit_nested(MAX_JSON_DEPTH), f"deeper than {MAX_JSON_DEPTH}"),
        ("audits", audit_nested(900), f"deeper than {MAX_JSON_DEPTH}"),
        ("audits", f'[{{"event": "ok"}}, {audit_nested(MAX_JSON_DEPTH)}]', "message 1: Audit.details.a.a"),
    ],
)
def test_enqueue__unstorable_message_is_422(post, queue, body, problem):
    """A message not every engine stores is refused with 422 naming the field; nothing is stored."""
    response = post(queue, body)
    assert response.status_code == 422
    assert problem in json.dumps(response.json())
    assert registry.get(queue).queue_model.objects.count() == 0


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?at=0001-01-01T00:00:00%2B14:00", "at"),
        ("?expires_at=9999-12-31T23:59:59-10:00", "expires_at"),
        ("?delay=80000000000000", "delay"),
        ("?delay=P999999999D", "delay"),
    ],
)
def test_enqueue__time_out_of_range_is_422(post, query, field):
    """A time outside the supported range is refused with 422 naming the option and the range."""
    response = post("greetings", '{"name": "a"}', query)
    assert response.status_code == 422
    assert f"{field}: " in json.dumps(response.json())
    assert "outside the supported range" in json.dumps(response.json())
    assert registry.get("greetings").queue_model.objects.count() == 0
