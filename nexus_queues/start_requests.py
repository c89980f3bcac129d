"""Start requests: "drain this queue now", stored in the queue's settings for the workers of a scheduled job.

The jobs layer says which queues' jobs run on a schedule as it registers them (:func:`start_on_request`), so that
enqueueing can store a request without knowing jobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone

from .updates import default_status

if TYPE_CHECKING:
    from .messages import QueueMessage

_on_request: set[str] = set()
"""The queues whose job runs on a schedule: a worker starts it early only for a stored request."""


def start_on_request(message_class: type[QueueMessage], on: bool) -> None:
    """Does the queue's job need a stored request to start now (it runs on a schedule)? Told by the job registry."""
    (_on_request.add if on else _on_request.discard)(message_class.queue_name())


def needs_request(message_class: type[QueueMessage]) -> bool:
    """Does starting the queue's job now need a request stored for the workers (its job runs on a schedule)?"""
    return message_class.queue_name() in _on_request


def request_start(message_class: type[QueueMessage]) -> None:
    """Record that the queue's job should drain it now, whatever its schedule (``start_processing``); nothing for a
    switched-off queue, which the request would start as soon as it is switched on."""
    now = timezone.now()
    rows = message_class.queue_settings()
    if rows.filter(processing_enabled=True).update(start_requested_at=now, updated_at=now):  # one UPDATE, usually
        return
    rows.get_or_create(  # a queue without a settings row is on; a switched-off one keeps its row as it is
        queue=message_class.queue_name(),
        defaults={"start_requested_at": now, "default_status": default_status(message_class)},
    )
