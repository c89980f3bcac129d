"""Queue endpoints: list queues, enqueue messages, read and change a queue's run-time settings."""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from django.http import HttpRequest
from ninja import Query, Router, Status
from ninja.errors import ValidationError
from pydantic import ValidationError as PydanticValidationError

from ..enqueueing import EnqueueResult, enqueue, enqueue_many
from ..health import queue_health
from ..jobs.control import set_processing_enabled
from ..messages import QueueMessage, message_id_of
from ..permissions import may
from ..registry import registry
from ..status import Status as MessageStatus
from ..updates import default_status, set_default_status
from . import schemas
from .auth import queue_for
from .bodies import read_json
from .errors import field_error, pydantic_errors

router = Router(tags=["queues"])
ERRORS: dict[int, type[schemas.Error]] = {code: schemas.Error for code in (400, 401, 403, 404, 413, 422)}


@router.get("/queues", response={200: list[schemas.Queue], **ERRORS})
def list_queues(request: HttpRequest) -> list[dict[str, Any]]:
    """Every queue you may view, with its counts per status and its health."""
    return [_queue(cls) for cls in registry if may(request.auth, "view", cls.queue_model)]  # type: ignore[attr-defined]


@router.get("/queues/{name}", response={200: schemas.Queue, **ERRORS})
def get_queue(request: HttpRequest, name: str) -> dict[str, Any]:
    """One queue, with its counts per status and its health."""
    return _queue(queue_for(request, name, "view"))


@router.post(
    "/queues/{name}", response={201: schemas.Enqueued, **ERRORS}, operation_id="enqueue",
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": {}}}}},
)
def enqueue_messages(
    request: HttpRequest, name: str, options: Query[schemas.EnqueueOptions]
) -> Status[dict[str, Any]]:
    """Enqueue one message (a JSON object) or many (a JSON array, stored as one batch).

    Scheduled with ``at`` or ``delay`` (Sleeping until then), or put in ``status``; nothing is
    stored unless every message is valid.
    """
    message_class = queue_for(request, name, "add")
    data = read_json(request)
    kwargs = {**options.model_dump(), "return_ids": True}
    if isinstance(data, list):
        messages = _validate(message_class, data, ["body"])
        return Status(201, _placed(messages, enqueue_many(messages, **kwargs)))
    if isinstance(data, dict):
        [message] = _validate(message_class, [data], ["body"], indexed=False)
        return Status(201, _placed([message], enqueue(message, **kwargs)))
    raise field_error(["body"], "The body must be a JSON object (one message) or an array (many).")


@router.get("/queues/{name}/settings", response={200: schemas.QueueSettings, **ERRORS})
def get_settings(request: HttpRequest, name: str) -> dict[str, Any]:
    """The queue's default enqueue status and whether its processing is on."""
    return _settings(queue_for(request, name, "view"))


@router.patch("/queues/{name}/settings", response={200: schemas.QueueSettings, **ERRORS})
def change_settings(request: HttpRequest, name: str, change: schemas.QueueSettingsChange) -> dict[str, Any]:
    """Set the queue's default enqueue status (e.g. ``OnHold``) and/or turn its processing on or off."""
    message_class = queue_for(request, name, "change")
    if change.default_status is not None:
        set_default_status(message_class, change.default_status)
    if change.processing_enabled is not None:
        set_processing_enabled(message_class, change.processing_enabled)
    return _settings(message_class)


def _validate(
    message_class: type[QueueMessage], items: list[Any], loc: list[str | int], indexed: bool = True
) -> list[QueueMessage]:
    """Every item as a message of the class, or one 422 listing the errors of all bad items."""
    messages, errors = [], []
    for i, item in enumerate(items):
        item_loc = [*loc, i] if indexed else loc
        try:
            message = message_class.model_validate(item)
            message_id_of(message)
            messages.append(message)
        except PydanticValidationError as exc:
            errors += pydantic_errors(exc, item_loc).errors
        except ValueError as exc:
            errors += field_error([*item_loc, "message_id"], str(exc)).errors
    if errors:
        raise ValidationError(errors)
    return messages


def _placed(messages: list[QueueMessage], result: EnqueueResult) -> dict[str, Any]:
    index = {id(message): i for i, message in enumerate(messages)}
    row_ids = {id(message): row_id for message, row_id in zip(result.stored, result.ids or (), strict=True)}

    def placed(group: tuple[QueueMessage, ...]) -> list[dict[str, Any]]:
        ordered = sorted(group, key=lambda m: index[id(m)])
        return [{"index": index[id(m)], "message_id": message_id_of(m), "id": row_ids.get(id(m))} for m in ordered]

    return {name: placed(getattr(result, name)) for name in ("stored", "discarded", "superseded")}


def _queue(message_class: type[QueueMessage]) -> dict[str, Any]:
    options = message_class.queue_options
    rows = message_class.queue_items()
    counts = {status.value: 0 for status in MessageStatus}
    counts.update(rows.order_by().values_list("status").annotate(n=Count("id")))
    health = queue_health(message_class)
    return {
        "name": options.queue, "category": options.category, "has_identity": message_class.has_identity,
        "idempotent": options.idempotent, "counts": counts,
        "health": {"status": health.status, "reasons": list(health.reasons)}, **_settings(message_class),
    }


def _settings(message_class: type[QueueMessage]) -> dict[str, Any]:
    enabled = message_class.queue_settings().processing_enabled()
    return {"default_status": default_status(message_class), "processing_enabled": enabled}


