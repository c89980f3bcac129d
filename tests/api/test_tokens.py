"""Bearer tokens from ``manage.py nexus_api_token``: who they act as, when they stop working."""

import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from nexus_queues.api_tokens import make_token
from tests.api_client import make_user, stored
from tests.testapp.queues import Greeting

pytestmark = pytest.mark.django_db


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
