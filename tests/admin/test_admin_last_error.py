"""A retried message (Pending again) keeps the error of its failed attempt as its *last* error, in the admin and
the API alike, and the admin never shows it as the current one."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from nexus_queues import enqueue_many, lease, mark_error
from tests.api_client import Api, make_user
from tests.factories import GreetingFactory
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"
ERROR_FIELDS = ("error_type", "error_message", "error_traceback", "attempts")


def failed(count: int) -> list[int]:
    """``count`` messages that really failed: leased, then marked Error with a raised exception."""
    enqueue_many([GreetingFactory() for _ in range(count)])
    items = lease(Greeting, count)
    try:
        raise ValueError("no such customer")
    except ValueError as exc:
        mark_error(items, exc)
    return [item.pk for item in items]


def fieldset_headings(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r'<h2[^>]*class="fieldset-heading"[^>]*>(.*?)</h2>',
                                                                    html, re.S)]


def test_retry__admin_and_api_keep_the_error_as_the_last_error(admin_client: Client) -> None:
    """Retried from the admin's action or the API, a message is Pending with its failed attempt's error kept."""
    by_admin, by_api = failed(2)
    admin_client.post(GREETINGS, {"action": "set_pending", "index": "0", "_selected_action": [str(by_admin)]})
    response = Api(make_user("root", superuser=True)).post(f"queues/greetings/messages/{by_api}/status",
                                                           {"status": "Pending"})
    assert response.status_code == 200
    rows = {row["id"]: row for row in Greeting.queue_model.objects.values("id", "status", *ERROR_FIELDS)}
    assert rows[by_admin]["status"] == rows[by_api]["status"] == "Pending"
    assert rows[by_admin]["error_type"] == "builtins.ValueError"
    assert "ValueError: no such customer" in rows[by_admin]["error_traceback"]
    assert {k: rows[by_admin][k] for k in ERROR_FIELDS} == {k: rows[by_api][k] for k in ERROR_FIELDS}
    assert {k: response.json()[k] for k in ERROR_FIELDS} == {k: rows[by_api][k] for k in ERROR_FIELDS}


def test_message_page__kept_error_is_titled_last_error(admin_client: Client) -> None:
    """After a retry the error shows under "Last error", saying the message is Pending now; while the message is
    Error, under "Error"."""
    current, retried = failed(2)
    admin_client.post(GREETINGS, {"action": "set_pending", "index": "0", "_selected_action": [str(retried)]})
    html = admin_client.get(f"{GREETINGS}{retried}/change/").content.decode()
    assert "Last error" in fieldset_headings(html) and "Error" not in fieldset_headings(html)
    assert "Not the current state: the message is Pending now." in html
    assert "ValueError: no such customer" in html
    html = admin_client.get(f"{GREETINGS}{current}/change/").content.decode()
    assert "Error" in fieldset_headings(html) and "Last error" not in fieldset_headings(html)


def test_message_page__no_error_no_last_error(admin_client: Client) -> None:
    """A message that never failed has an empty "Error" section, not a "Last error"."""
    enqueue_many([GreetingFactory()])
    html = admin_client.get(f"{GREETINGS}{Greeting.queue_model.objects.get().pk}/change/").content.decode()
    assert "Error" in fieldset_headings(html) and "Last error" not in fieldset_headings(html)
