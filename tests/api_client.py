"""Calling the API in tests: a Django test client acting as one user."""

from __future__ import annotations

import base64
import json
from typing import Any

from django.contrib.auth.models import Permission, User
from django.test import Client

from nexus_queues.api_tokens import make_token

PASSWORD = "secret-pw"


def make_user(name: str, *perms: str, superuser: bool = False) -> User:
    """A user holding these permission codenames."""
    user = User.objects.create_user(name, password=PASSWORD, is_superuser=superuser)
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


class Api:
    """A test client that calls the API as one user: by HTTP Basic, or by token (no password hashing)."""

    def __init__(self, user: User | None = None, password: str = PASSWORD, *, token: bool = False) -> None:
        self.client = Client()
        self.headers: dict[str, str] = {}
        if user is not None and token:
            self.headers["HTTP_AUTHORIZATION"] = f"Bearer {make_token(user)}"
        elif user is not None:
            basic = base64.b64encode(f"{user.username}:{password}".encode()).decode()
            self.headers["HTTP_AUTHORIZATION"] = f"Basic {basic}"

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(f"/nexus/{path}", params, **self.headers)

    def send(self, method: str, path: str, body: Any, query: str = "") -> Any:
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        call = getattr(self.client, method)
        return call(f"/nexus/{path}{query}", data=data, content_type="application/json", **self.headers)

    def post(self, path: str, body: Any, query: str = "") -> Any:
        return self.send("post", path, body, query)

    def patch(self, path: str, body: Any) -> Any:
        return self.send("patch", path, body)


def stored(message_class: Any) -> list[Any]:
    """The queue's rows in id order."""
    return list(message_class.queue_model.objects.order_by("id"))
