"""Status fields suggest the built-in statuses an operator may set and the custom ones in the table (an HTML
datalist), and still take a new status."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from nexus_queues import enqueue_many
from nexus_queues.admin.overview import queue_status_suggestions, status_suggestions
from nexus_queues.updates import set_default_status
from tests.factories import GreetingFactory
from tests.testapp.queues import Audit, Greeting

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"
BUILT_IN = ["Pending", "Processed", "Error", "Abandoned", "Cancelled"]


def datalist(html: str, field: str) -> list[str]:
    """The suggestions the input named ``field`` offers."""
    box = re.search(rf'<input[^>]*name="{field}"[^>]*>', html)
    assert box, f"no input named {field}"
    list_id = re.search(r'list="([^"]+)"', box.group(0))
    assert list_id, f"the {field} input has no datalist"
    options = re.search(rf'<datalist id="{list_id.group(1)}">(.*?)</datalist>', html, re.S)
    assert options
    return re.findall(r'<option value="([^"]*)">', options.group(1))


def seeded() -> list[int]:
    enqueue_many([GreetingFactory() for _ in range(2)])
    enqueue_many([GreetingFactory()], status="OnHold")
    enqueue_many([GreetingFactory()], status="Waiting for stock")
    return list(Greeting.queue_model.objects.order_by("id").values_list("id", flat=True))


def test_status_suggestions__built_ins_then_custom_ones() -> None:
    """Leased and Sleeping are not offered (no operator sets them); custom statuses follow, sorted, once."""
    assert status_suggestions(["Leased", "Paused", "Pending", "OnHold"], "Paused") == [*BUILT_IN, "OnHold", "Paused"]


def test_queue_status_suggestions__reads_the_table_and_the_default_status() -> None:
    """The custom statuses present in the table and the queue's default status (before any message has it)."""
    seeded()
    set_default_status(Greeting, "Quarantine")
    assert queue_status_suggestions(Greeting) == [*BUILT_IN, "OnHold", "Quarantine", "Waiting for stock"]
    assert queue_status_suggestions(Audit) == [*BUILT_IN, "OnHold"]


def test_queue_status_suggestions__reads_a_bounded_number_of_statuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """However many custom statuses the table holds, only the first few are read, one index probe each."""
    monkeypatch.setattr("nexus_queues.admin.overview.MAX_STATUS_SUGGESTIONS", 2)
    seeded()
    assert queue_status_suggestions(Greeting) == [*BUILT_IN, "OnHold"]


def test_message_page__status_suggestions(admin_client: Client) -> None:
    ids = seeded()
    html = admin_client.get(f"{GREETINGS}{ids[0]}/change/").content.decode()
    assert datalist(html, "status") == [*BUILT_IN, "OnHold", "Waiting for stock"]


def test_set_status_action__suggestions_and_a_new_status(admin_client: Client) -> None:
    """The action's form suggests statuses; a status never seen before is still taken."""
    ids = seeded()
    data = {"action": "set_custom_status", "index": "0", "_selected_action": [str(ids[0])]}
    assert datalist(admin_client.post(GREETINGS, data).content.decode(), "status") == [
        *BUILT_IN, "OnHold", "Waiting for stock"
    ]
    admin_client.post(GREETINGS, {**data, "apply": "1", "status": "Brand new"})
    assert Greeting.queue_model.objects.get(pk=ids[0]).status == "Brand new"


def test_enqueue_form__status_suggestions(admin_client: Client) -> None:
    seeded()
    html = admin_client.get(f"{GREETINGS}add/").content.decode()
    assert datalist(html, "status") == [*BUILT_IN, "OnHold", "Waiting for stock"]


def test_default_status_form__suggestions_and_a_new_status(admin_client: Client) -> None:
    """The queue settings form above the list suggests statuses too, and saves a new one."""
    seeded()
    html = admin_client.get(GREETINGS).content.decode()
    assert datalist(html, "default_status") == [*BUILT_IN, "OnHold", "Waiting for stock"]
    admin_client.post(f"{GREETINGS}queue-settings/", {"default_status": "Held for review", "processing_enabled": "on"})
    assert "Held for review" in datalist(admin_client.get(GREETINGS).content.decode(), "default_status")
