"""A message's times on its page as the list shows them: to the second, in the current time zone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin

from ..models import QueueItem
from .job_runs import with_seconds


def shown_to_the_second(field: str) -> Callable[[Any, QueueItem], str]:
    """A read-only admin field showing the item's ``field`` as ``2026-11-26 00:49:06`` ("-" for none)."""

    @admin.display(description=field.replace("_", " "))
    def show(model_admin: Any, item: QueueItem) -> str:
        return with_seconds(getattr(item, field))

    return show


class MessageTimes:
    """The message page's times, named ``<field>_text``, in the list's format rather than Django's long one."""

    created_at_text = shown_to_the_second("created_at")
    updated_at_text = shown_to_the_second("updated_at")
    process_at_text = shown_to_the_second("process_at")
    expires_at_text = shown_to_the_second("expires_at")
    processed_at_text = shown_to_the_second("processed_at")
    lease_expires_at_text = shown_to_the_second("lease_expires_at")
