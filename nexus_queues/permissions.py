"""Who may do what to a queue, a job or their records: Django's model permissions, change implying view as in
Django's admin. The admin, the API and the metrics page decide through :func:`may`; it imports only Django."""

from __future__ import annotations

from typing import Any, Literal

from django.contrib.auth import get_permission_codename
from django.db.models import Model

Action = Literal["view", "add", "change", "delete"]


def may(user: Any, action: Action, model: type[Model]) -> bool:
    """Does ``user`` hold Django's ``action`` permission on ``model``? Change implies view, as in Django's admin."""
    meta = model._meta
    actions = ("view", "change") if action == "view" else (action,)
    return any(user.has_perm(f"{meta.app_label}.{get_permission_codename(each, meta)}") for each in actions)
