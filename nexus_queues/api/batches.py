"""Batch endpoints: a queue's batches and one batch's progress."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router
from ninja.errors import HttpError

from ..models import Batch
from . import schemas
from .auth import queue_for
from .queues import ERRORS

router = Router(tags=["batches"])
LATEST = 100


@router.get("/queues/{name}/batches", response={200: list[schemas.Batch], **ERRORS})
def list_batches(request: HttpRequest, name: str) -> list[dict[str, Any]]:
    """The queue's latest 100 batches, newest first, with their counts."""
    message_class = queue_for(request, name, "view")
    batches = Batch.objects.using(message_class.queue_options.database).filter(queue=message_class.queue_name())
    return [batch.counts() for batch in batches.order_by("-pk")[:LATEST]]


@router.get("/queues/{name}/batches/{batch_id}", response={200: schemas.Batch, **ERRORS})
def get_batch(request: HttpRequest, name: str, batch_id: int) -> dict[str, Any]:
    """One batch of the queue: how many of its messages are pending, processed, in error, cancelled."""
    message_class = queue_for(request, name, "view")
    batches = Batch.objects.using(message_class.queue_options.database)
    batch = batches.filter(queue=message_class.queue_name(), pk=batch_id).first()
    if batch is None:
        raise HttpError(404, f"Queue {message_class.queue_name()!r} has no batch {batch_id}.")
    return batch.counts()
