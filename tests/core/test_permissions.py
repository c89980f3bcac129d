"""Who may do what: Django's model permissions, change implying view as in Django's admin."""

import pytest
from django.contrib.auth.models import AnonymousUser

from nexus_queues.permissions import may
from tests.api_client import make_user
from tests.testapp.queues import Greeting, Product

pytestmark = pytest.mark.django_db

GREETINGS = Greeting.queue_model


def test_may__change_implies_view_and_nothing_else():
    operator = make_user("operator", "change_greetingqueueitem")
    assert may(operator, "view", GREETINGS) and may(operator, "change", GREETINGS)
    assert not may(operator, "add", GREETINGS) and not may(operator, "delete", GREETINGS)
    assert not may(operator, "view", Product.queue_model)


def test_may__view_implies_nothing_more():
    viewer = make_user("viewer", "view_greetingqueueitem")
    assert may(viewer, "view", GREETINGS)
    assert not any(may(viewer, action, GREETINGS) for action in ("add", "change", "delete"))


def test_may__add_or_delete_alone_do_not_show_a_queue():
    assert not may(make_user("adder", "add_greetingqueueitem", "delete_greetingqueueitem"), "view", GREETINGS)


def test_may__superuser_everything_anonymous_nothing():
    root = make_user("root", superuser=True)
    assert all(may(root, action, GREETINGS) for action in ("view", "add", "change", "delete"))
    assert not may(AnonymousUser(), "view", GREETINGS)
