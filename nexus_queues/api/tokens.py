"""API tokens for services: signed with SECRET_KEY, checked in microseconds (HTTP Basic runs the
password hasher, about 0.4 s, on every request).

A token names its row of :class:`~nexus_queues.api_tokens.ApiToken`, bound to the user's password: changing the
password, deactivating the user or deleting the row revokes it; Django rehashing the same password does not.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare
from ninja.security import HttpBearer

from ..api_tokens import SALT, ApiToken, fingerprint
from ..conf import settings
from ..limits import unstorable_text


def make_token(user: Any) -> str:
    """A bearer token that authenticates as ``user``."""
    row = ApiToken.objects.create(user=user, password=fingerprint(user.password))
    return signing.dumps({"t": row.pk}, salt=SALT)


def revoke_tokens(user: Any) -> int:
    """Revoke every token of ``user`` made by :func:`make_token`; how many there were."""
    return ApiToken.objects.filter(user=user).delete()[0]


def user_for_token(token: str) -> Any:
    """The active user the token names, or None when it is forged, expired or revoked."""
    max_age = settings.API_TOKEN_MAX_AGE
    try:
        data = signing.loads(token, salt=SALT, max_age=max_age)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict):
        return None
    user = _by_row(data.get("t")) if "t" in data else _by_password(data.get("u"), data.get("p"))
    return user if user is not None and user.is_active else None


def _by_row(pk: Any) -> Any:
    if not isinstance(pk, int) or isinstance(pk, bool):
        return None
    row = ApiToken.objects.filter(pk=pk).select_related("user").first()
    if row is None or not constant_time_compare(row.password, fingerprint(row.user.password)):
        return None
    return row.user


def _by_password(pk: Any, password: Any) -> Any:
    """A token made before tokens had rows: bound to the password hash itself, so a rehash revokes it too."""
    pk = _user_id(pk)
    if pk is None:
        return None
    user = get_user_model()._default_manager.filter(pk=pk).first()
    if user is None or not constant_time_compare(str(password), fingerprint(user.password)):
        return None
    return user


def _user_id(pk: Any) -> Any:
    """``pk`` as the user model's key, or None when no user can have it ("abc" for an integer key, NUL)."""
    if not isinstance(pk, int | str) or isinstance(pk, bool) or (isinstance(pk, str) and unstorable_text(pk)):
        return None
    try:
        return get_user_model()._meta.pk.to_python(pk)
    except ValidationError:
        return None


class TokenAuth(HttpBearer):
    """``Authorization: Bearer <token>`` with a token from ``manage.py nexus_api_token``."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        """The token's user, or None."""
        user = user_for_token(token)
        if user is not None:
            request.user = user
        return user
