"""API tokens across a password rehash: a Django upgrade that raises the hasher's iterations rehashes the same password
at the next login, and the user's tokens go on working; a changed password or a revoked token is refused."""

from __future__ import annotations

import base64
import io

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "an-old-password"
GREETINGS = "/nexus/queues/greetings"


class BeforeUpgrade(PBKDF2PasswordHasher):
    """PBKDF2 with the iterations of an older Django (few, so the test is quick)."""

    iterations = 1000


class AfterUpgrade(PBKDF2PasswordHasher):
    """The same algorithm with more iterations, as the next Django release brings."""

    iterations = 1500


@pytest.fixture
def service(settings) -> tuple[User, str]:
    """A user whose password was hashed before the upgrade, and a token made for it then."""
    settings.PASSWORD_HASHERS = [f"{__name__}.BeforeUpgrade"]
    user = User.objects.create_user("svc", password=PASSWORD, is_staff=True, is_superuser=True)
    out = io.StringIO()
    call_command("nexus_api_token", "svc", stdout=out)
    settings.PASSWORD_HASHERS = [f"{__name__}.AfterUpgrade"]
    return user, out.getvalue().strip()


def bearer(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def iterations(user: User) -> int:
    user.refresh_from_db()
    return int(user.password.split("$")[1])


def test_token__survives_a_rehash_by_basic_auth(service: tuple[User, str]) -> None:
    """The first Basic-auth call after the upgrade rehashes the password; the token still answers 200."""
    user, token = service
    basic = base64.b64encode(f"svc:{PASSWORD}".encode()).decode()
    assert Client(HTTP_AUTHORIZATION=f"Basic {basic}").get(GREETINGS).status_code == 200
    assert iterations(user) == AfterUpgrade.iterations  # the rehash did happen
    assert bearer(token).get(GREETINGS).status_code == 200


def test_token__survives_a_rehash_by_admin_login(service: tuple[User, str]) -> None:
    """Logging in to the admin after the upgrade rehashes the password; the token still answers 200."""
    user, token = service
    assert Client().login(username="svc", password=PASSWORD)
    assert iterations(user) == AfterUpgrade.iterations
    assert bearer(token).get(GREETINGS).status_code == 200


def test_token__a_new_password_revokes_it_even_saved_as_a_rehash_is(service: tuple[User, str]) -> None:
    """A password changed and saved with ``update_fields=["password"]``, as the rehash saves, still revokes."""
    user, token = service
    user.set_password("a-new-password")
    user.save(update_fields=["password"])
    assert bearer(token).get(GREETINGS).status_code == 401


def test_token__a_rehash_does_not_revive_a_token_of_an_older_password(service: tuple[User, str]) -> None:
    """A token revoked by a password change stays revoked when the new password is rehashed later."""
    user, token = service
    user.set_password("a-new-password")
    user.save()
    assert Client().login(username="svc", password="a-new-password")
    assert bearer(token).get(GREETINGS).status_code == 401


def test_token_command__revoke_refuses_the_users_tokens(service: tuple[User, str]) -> None:
    """``nexus_api_token --revoke USER`` revokes every token of that user; a new one works."""
    _, token = service
    call_command("nexus_api_token", "svc", "--revoke", stdout=io.StringIO())
    assert bearer(token).get(GREETINGS).status_code == 401
    out = io.StringIO()
    call_command("nexus_api_token", "svc", stdout=out)
    assert bearer(out.getvalue().strip()).get(GREETINGS).status_code == 200


def test_token__made_before_tokens_had_rows_still_works(service: tuple[User, str]) -> None:
    """A token of the earlier form (user and password fingerprint, no row) is still accepted until the password
    changes: upgrading nexus_queues revokes no token."""
    from django.core import signing

    from nexus_queues.api_tokens import SALT, fingerprint

    user, _ = service
    earlier = signing.dumps({"u": user.pk, "p": fingerprint(user.password)}, salt=SALT)
    assert bearer(earlier).get(GREETINGS).status_code == 200
    user.set_password("a-new-password")
    user.save()
    assert bearer(earlier).get(GREETINGS).status_code == 401


def test_token_admin__deleting_a_token_revokes_that_one(service: tuple[User, str]) -> None:
    """An admin deletes one token on its admin page: that token answers 401, the user's others still work."""
    from nexus_queues.api_tokens import ApiToken

    user, token = service
    out = io.StringIO()
    call_command("nexus_api_token", "svc", stdout=out)
    other = out.getvalue().strip()
    client = Client()
    client.force_login(user)
    first = ApiToken.objects.order_by("id").first()
    assert first is not None
    page = f"/admin/nexus_queues/apitoken/{first.pk}/delete/"
    assert client.post(page, {"post": "yes"}).status_code == 302
    assert bearer(token).get(GREETINGS).status_code == 401
    assert bearer(other).get(GREETINGS).status_code == 200


@pytest.mark.parametrize("data", [
    {"u": "abc", "p": "x"}, {"u": "12abc", "p": "x"}, {"u": "1\x00", "p": "x"}, {"u": 2**70, "p": "x"},
    {"u": -(2**70), "p": "x"}, {"u": [1], "p": "x"}, {"u": True, "p": "x"}, {"t": 2**70}, {"t": "1"},
])  # fmt: skip
def test_token__a_signed_token_naming_no_possible_user_is_401(data: dict[str, object]) -> None:
    """A validly signed token (of the earlier form, or a row's) whose id no user or row can have answers 401: the
    earlier form's user id that is not a number answered 500."""
    from django.core import signing

    from nexus_queues.api_tokens import SALT

    assert bearer(signing.dumps(data, salt=SALT)).get(GREETINGS).status_code == 401
