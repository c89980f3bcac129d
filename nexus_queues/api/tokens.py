"""API tokens for services: signed with SECRET_KEY, checked in microseconds (HTTP Basic runs the
password hasher, about 0.4 s, on every request).

A token names its user and a fingerprint of the user's password hash: changing the password or
deactivating the user revokes every token of that user. No table is needed.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core import signing
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare, salted_hmac
from ninja.security import HttpBearer

from ..conf import settings

SALT = "nexus_queues.api.token"


def make_token(user: Any) -> str:
    """A bearer token that authenticates as ``user``."""
    return signing.dumps({"u": user.pk, "p": _fingerprint(user)}, salt=SALT)


def user_for_token(token: str) -> Any:
    """The active user the token names, or None when it is forged, expired or revoked."""
    max_age = settings.API_TOKEN_MAX_AGE
    try:
        data = signing.loads(token, salt=SALT, max_age=max_age)
    except signing.BadSignature:
        return None
    pk = data.get("u") if isinstance(data, dict) else None
    if not isinstance(pk, int | str):
        return None
    user = get_user_model()._default_manager.filter(pk=pk, is_active=True).first()
    if user is None or not constant_time_compare(str(data.get("p")), _fingerprint(user)):
        return None
    return user


class TokenAuth(HttpBearer):
    """``Authorization: Bearer <token>`` with a token from ``manage.py nexus_api_token``."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        """The token's user, or None."""
        user = user_for_token(token)
        if user is not None:
            request.user = user
        return user


def _fingerprint(user: Any) -> str:
    return salted_hmac(SALT, user.password, algorithm="sha256").hexdigest()[:32]
