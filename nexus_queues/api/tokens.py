"""The API's bearer tokens as ninja reads them (:mod:`nexus_queues.api_tokens` makes and checks them)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer

from ..api_tokens import user_for_token


class TokenAuth(HttpBearer):
    """``Authorization: Bearer <token>`` with a token from ``manage.py nexus_api_token``."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        """The token's user, or None."""
        user = user_for_token(token)
        if user is not None:
            request.user = user
        return user
