"""Who may call the API: Django users by token, HTTP Basic or session (with CSRF); per-queue model permissions, as
the admin reads them (:mod:`nexus_queues.permissions`)."""

from __future__ import annotations

from typing import Any, Literal

from django.contrib.auth import authenticate
from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBasicAuth
from ninja.security import SessionAuth as NinjaSessionAuth

from ..exceptions import NotRegistered
from ..jobs import control as job_control
from ..messages import QueueMessage
from ..permissions import may
from ..registry import registry
from .tokens import TokenAuth

Action = Literal["view", "add", "change"]


class BasicAuth(HttpBasicAuth):
    """HTTP Basic against Django's authentication backends, for services."""

    def authenticate(self, request: HttpRequest, username: str, password: str) -> Any:
        """The active user with these credentials, or None."""
        if "\x00" in username or "\x00" in password:
            return None  # no user has such a name, and PostgreSQL refuses to look one up (a 500)
        user = authenticate(request, username=username, password=password)
        if user is not None:
            request.user = user
        return user


class SessionAuth(NinjaSessionAuth):
    """The user logged in to Django (the admin's session); writes need the CSRF token."""

    def __call__(self, request: HttpRequest) -> Any:
        """The session's user, or None (401) without one or when the request brings its own credentials."""
        # ninja checks CSRF before looking at the session: without this, anonymous writes and
        # wrong Basic credentials would answer "CSRF check Failed" instead of 401.
        if "Authorization" in request.headers or not request.user.is_authenticated:
            return None
        return super().__call__(request)


AUTH = [TokenAuth(), BasicAuth(), SessionAuth()]


def queue_for(request: HttpRequest, name: str, action: Action) -> type[QueueMessage]:
    """The queue's message class; 404 when unknown, 403 without the permission for ``action``."""
    try:
        message_class = registry.get(name)
    except NotRegistered:
        raise HttpError(404, f"No queue named {name!r}.") from None
    if not may(request.auth, action, message_class.queue_model):  # type: ignore[attr-defined]
        raise HttpError(403, f"You do not have permission to {action} queue {name!r}.")
    return message_class


def job_for(request: HttpRequest, name: str, action: job_control.Action) -> job_control.Job:
    """The job named ``name`` (its dotted path); 404 when unknown, 403 without the permission for ``action``."""
    try:
        job = job_control.find_job(name)
    except NotRegistered:
        raise HttpError(404, f"No job named {name!r}.") from None
    if not job_control.may(request.auth, action, job):  # type: ignore[attr-defined]
        raise HttpError(403, f"You do not have permission to {action} job {name!r}.")
    return job
