"""The API fuzzed from its own OpenAPI description (schemathesis): no input makes it answer 5xx."""

import base64
import json

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from nexus_queues import enqueue_many
from tests.api_client import Api, make_user
from tests.factories import GreetingFactory, InventoryFactory, ProductFactory

MAX_EXAMPLES = 50  # per operation and generation mode; CI runs this on three engines
# The description as served, with the whole Django app behind it (serving it reads no table).
schema = schemathesis.openapi.from_wsgi("/nexus/openapi.json", WSGIHandler())


@pytest.fixture
def basic_auth(db, settings):
    """A superuser's Basic header, and a few messages for the reads and changes to find.

    Django's test client keeps requests from closing the test's connection; the WSGI app called
    directly would, so that hook is off during the test, as the test client does.
    """
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    User.objects.create_superuser("fuzz", password="fuzz-pw")
    enqueue_many(GreetingFactory.build_batch(3))
    enqueue_many(ProductFactory.build_batch(2))
    enqueue_many(InventoryFactory.build_batch(2))
    yield {"Authorization": "Basic " + base64.b64encode(b"fuzz:fuzz-pw").decode()}
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@pytest.mark.slow
def test_api__no_server_errors(case, basic_auth):
    """Generated requests, valid and invalid, get a 2xx or 4xx answer, never a 5xx."""
    case.call_and_validate(headers=basic_auth, checks=[not_a_server_error])


# JSON as Python writes it, with what strict JSON and the databases refuse: NaN, infinities, NUL, surrogates.
TEXT = st.text(st.characters(blacklist_categories=()), max_size=8)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                      max_leaves=8)
JSON_TEXTS = VALUES.map(json.dumps) | st.integers(1, 20_000).map(lambda n: "[" * n + "]" * n) | TEXT


@pytest.fixture
def token_api(db):
    enqueue_many(InventoryFactory.build_batch(2))
    return Api(make_user("fuzz-token", superuser=True), token=True)


@given(text=JSON_TEXTS)
@settings(max_examples=MAX_EXAMPLES * 4, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@pytest.mark.slow
def test_api__any_json_text_is_answered_without_a_server_error(token_api, text):
    """Any text as a list filter, a status change's filter or an enqueue body gets a 2xx or 4xx."""
    assert token_api.get("queues/inventory/messages", filter=text).status_code < 500
    assert token_api.post("queues/inventory/status", f'{{"status": "Parked", "filter": {text}}}').status_code < 500
    assert token_api.post("queues/greetings", text).status_code < 500
