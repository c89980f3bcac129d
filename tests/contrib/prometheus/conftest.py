"""Fixtures of the metrics tests: a fast password hasher (users are made per test)."""

import pytest


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    """Making a user hashes its password; a fast hasher keeps the tests quick."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
