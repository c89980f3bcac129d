"""Queues are named in words on the admin's index, breadcrumbs and titles, and the breadcrumbs name the index
section that lists the queue."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from nexus_queues import enqueue
from tests.testapp.queues import Audit, Greeting

pytestmark = pytest.mark.django_db

GREETINGS = "/admin/testapp/greetingqueueitem/"
AUDITS = "/admin/testapp/auditqueueitem/"


def crumbs(html: str) -> list[str]:
    """The breadcrumbs' texts, links and all."""
    trail = re.search(r'<div class="breadcrumbs"[^>]*>(.*?)</div>', html, re.S)
    assert trail, "no breadcrumbs"
    return [re.sub(r"<[^>]+>", "", part).strip() for part in trail.group(1).split("&rsaquo;")]


def title(html: str) -> str:
    found = re.search(r"<title>(.*?)</title>", html, re.S)
    assert found
    return found.group(1).strip()


def test_index__queues_named_in_words(admin_client: Client) -> None:
    """The index and the side bar list each queue by its title: its class's verbose name, else its name in words."""
    response = admin_client.get("/admin/")
    names = {m["object_name"]: m["name"] for app in response.context["app_list"] for m in app["models"]}
    assert names["GreetingQueueItem"] == "Greetings"
    assert names["AuditQueueItem"] == "Audit trail"
    assert names["InventoryQueueItem"] == "Inventory"
    assert ">Audit trail</a>" in response.content.decode()


def test_app_index__queues_named_in_words(admin_client: Client) -> None:
    """The app's own page (Django's app index) names its queues the same way."""
    response = admin_client.get("/admin/testapp/")
    names = [m["name"] for app in response.context["app_list"] for m in app["models"]]
    assert "Audit trail" in names and "auditqueueitem" not in " ".join(names).lower()


def test_changelist__title_and_breadcrumbs_name_the_section_and_queue(admin_client: Client) -> None:
    """A queue's list is titled with the queue's title; its breadcrumbs go Home > the index section > the queue."""
    html = admin_client.get(GREETINGS).content.decode()
    assert crumbs(html) == ["Home", "Tests", "Greetings"]
    assert "<h1>Greetings</h1>" in html and title(html).startswith("Greetings |")
    assert crumbs(admin_client.get(AUDITS).content.decode()) == ["Home", "Queues", "Audit trail"]


def test_change_form__breadcrumbs_and_title(admin_client: Client) -> None:
    """The message page: Home > section > queue (linked) > the message; the queue's title above the message."""
    item_id = enqueue(Audit(event="login"), return_ids=True).ids[0]
    html = admin_client.get(f"{AUDITS}{item_id}/change/").content.decode()
    assert crumbs(html) == ["Home", "Queues", "Audit trail", f"Message #{item_id}"]
    assert f'<a href="{AUDITS}">Audit trail</a>' in html
    assert "<h1>Audit trail</h1>" in html and f"<h2>Message #{item_id}</h2>" in html


@pytest.mark.parametrize(("suffix", "last"), [("delete/", "Delete"), ("history/", "History")])
def test_delete_and_history__breadcrumbs(admin_client: Client, suffix: str, last: str) -> None:
    """Django's delete and history pages of a message carry the same breadcrumbs."""
    item_id = enqueue(Greeting(name="x"), return_ids=True).ids[0]
    html = admin_client.get(f"{GREETINGS}{item_id}/{suffix}").content.decode()
    assert crumbs(html) == ["Home", "Tests", "Greetings", f"Message #{item_id}", last]


def test_enqueue_and_action_pages__breadcrumbs_and_titles(admin_client: Client) -> None:
    """The enqueue form and an action's confirmation name the queue in words too."""
    html = admin_client.get(f"{GREETINGS}add/").content.decode()
    assert crumbs(html) == ["Home", "Tests", "Greetings", "Enqueue"]
    assert "<h1>Enqueue a message: Greetings</h1>" in html
    item_id = enqueue(Greeting(name="x"), return_ids=True).ids[0]
    data = {"action": "set_custom_status", "index": "0", "_selected_action": [str(item_id)]}
    html = admin_client.post(GREETINGS, data).content.decode()
    assert crumbs(html) == ["Home", "Tests", "Greetings", "Set status of"]
    assert "<h1>Set status of 1 message of Greetings?</h1>" in html
