"""Fixtures of the API tests: a fast password hasher, and a superuser's client."""

import pytest

from tests.api_client import Api, make_user


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    """Basic auth checks the password on every request; a fast hasher keeps the suite quick."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def admin():
    """The API as a superuser calls it (basic auth)."""
    return Api(make_user("root", superuser=True))
