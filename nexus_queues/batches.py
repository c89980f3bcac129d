"""Batches: group the messages enqueued in a block, follow their progress, run a completion once all have finished."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel

from . import membership
from .exceptions import InvalidArgument
from .limits import check_label
from .messages import QueueMessage, message_id_of
from .models.batches import Batch
from .registry import registry
from .serialization import canonical_json


class BatchResult(BaseModel):
    """A finished batch's counts, as its completion message's ``batch`` field receives them."""

    id: int
    queue: str
    label: str = ""
    total: int
    pending: int = 0
    processed: int
    error: int
    cancelled: int = 0
    created_at: datetime
    completed_at: datetime | None = None


@contextmanager
def batch(
    queue: type[QueueMessage] | str, *, label: str = "", on_complete: QueueMessage | None = None
) -> Iterator[Batch]:
    """Group the messages of ``queue`` enqueued in the block, in one transaction, into a :class:`Batch`.

    Once every one of them is Processed, Error or Cancelled, ``on_complete`` (a message of a queue whose class has
    a field ``batch: BatchResult | None = None``) is enqueued once, its ``batch`` field holding the counts. An
    exception in the block rolls back the batch and its messages.
    """
    message_class = registry.resolve(queue)
    if membership.current() is not None:
        raise InvalidArgument(f"Batch {membership.current()} is open: batches do not nest.")
    alias = message_class.queue_options.database
    check_completion(message_class, on_complete)
    with transaction.atomic(using=alias):
        opened = create(message_class, label=label, on_complete=on_complete)
        with membership.opened(opened):
            yield opened
        membership.close(alias, opened, timezone.now())
        opened.refresh_from_db(using=alias)


def create(message_class: type[QueueMessage], *, label: str = "", on_complete: QueueMessage | None = None) -> Batch:
    """A new open batch of ``message_class``'s queue, in the caller's transaction (a Spark merge's); its members
    join through :func:`membership.joined`, and :func:`membership.close` closes it."""
    alias = message_class.queue_options.database
    now = timezone.now()
    return Batch.objects.using(alias).create(
        queue=message_class.queue_name(),
        label=check_label("A batch's label", label),
        created_at=now,
        counted_at=now,
        **_completion(message_class, on_complete),
    )


def check_completion(message_class: type[QueueMessage], on_complete: QueueMessage | None) -> None:
    """:class:`InvalidArgument` unless ``on_complete`` can be the completion of a batch of ``message_class``
    (:class:`UnstorableValue` when it holds a value not every engine stores)."""
    _completion(message_class, on_complete)


def _completion(message_class: type[QueueMessage], on_complete: QueueMessage | None) -> dict[str, Any]:
    """The batch's completion columns for ``on_complete``; :class:`InvalidArgument` when it cannot be one."""
    if on_complete is None:
        return {}
    completion_class = type(on_complete)
    if not isinstance(on_complete, QueueMessage) or not hasattr(completion_class, "queue_model"):
        raise InvalidArgument(f"on_complete takes a message of a queue, not {completion_class.__name__}.")
    if "batch" not in completion_class.model_fields:
        raise InvalidArgument(
            f"{completion_class.__qualname__} cannot be a batch's completion: give it a field "
            "`batch: BatchResult | None = None`, which receives the batch's counts."
        )
    database = completion_class.queue_options.database
    if database != message_class.queue_options.database:
        raise InvalidArgument(
            f"A batch's completion is enqueued in the transaction that finishes it: queue "
            f"{completion_class.queue_name()!r} is in database {database!r}, the batch's queue "
            f"{message_class.queue_name()!r} in {message_class.queue_options.database!r}."
        )
    canonical_json(on_complete)  # an unstorable value fails here, not in the transaction that finishes the batch
    return {
        "completion_queue": completion_class.queue_name(),
        "completion_message": on_complete.model_dump(mode="json", exclude={"batch"}),
        "completion_message_id": message_id_of(on_complete),
    }
