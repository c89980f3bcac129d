"""Message endpoints: list and read a queue's messages, change their status."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Path, Query, Router
from ninja.errors import HttpError

from ..cancelling import cancel
from ..exceptions import BadFilter, MalformedJSON
from ..json_input import loads
from ..messages import QueueMessage
from ..status import validate_status
from ..updates import update_status
from . import schemas
from .auth import queue_for
from .errors import field_error
from .filters import MAX_FILTER_KEYS, MAX_FILTER_PATH, message_lookups
from .queues import ERRORS

router = Router(tags=["messages"])
FIELDS = tuple(schemas.Message.model_fields)
FILTER_HELP = (
    'Property filters, a JSON object: {"sku": "A1", "quantity__gte": 5}; '
    f"at most {MAX_FILTER_KEYS} properties, paths of at most {MAX_FILTER_PATH} parts."
)


@router.get("/queues/{name}/messages", response={200: schemas.MessagePage, **ERRORS})
def list_messages(
    request: HttpRequest, name: str, status: str | None = None,
    filter: str | None = Query(None, description=FILTER_HELP),
    cursor: int = Query(0, ge=0, le=schemas.MAX_ID, description="The next_cursor of the previous page."),
    limit: int = Query(100, ge=1, le=1000),
) -> dict[str, Any]:
    """A page of the queue's messages in id order, optionally only those in ``status`` and matching ``filter``.

    Pages follow ids, so messages enqueued meanwhile never shift them.
    """
    message_class = queue_for(request, name, "view")
    if status is not None:
        _check(["query", "status"], validate_status, status)
    lookups = _check(["query", "filter"], lambda text: message_lookups(_json_object(text)), filter or "{}")
    rows = message_class.queue_items().filter(**lookups, id__gt=cursor)
    if status is not None:
        rows = rows.filter(status=status)
    items = list(rows.order_by("id").values(*FIELDS)[: limit + 1])
    more = len(items) > limit
    return {"items": items[:limit], "next_cursor": items[limit - 1]["id"] if more else None}


@router.get("/queues/{name}/messages/{id}", response={200: schemas.Message, **ERRORS})
def get_message(request: HttpRequest, name: str, id: int = Path(..., ge=1, le=schemas.MAX_ID)) -> dict[str, Any]:
    """One message with everything about it."""
    return _one(queue_for(request, name, "view"), id)


@router.post("/queues/{name}/messages/{id}/status", response={200: schemas.Message, **ERRORS})
def set_message_status(
    request: HttpRequest, name: str, change: schemas.NewStatus, id: int = Path(..., ge=1, le=schemas.MAX_ID)
) -> dict[str, Any]:
    """Give one message a new status (e.g. Pending to retry it, or a custom one to set it aside)."""
    message_class = queue_for(request, name, "change")
    if not update_status(message_class, change.status, pk=id):
        raise _no_message(message_class, id)
    return _one(message_class, id)


@router.post("/queues/{name}/status", response={200: schemas.Changed, **ERRORS})
def set_status(request: HttpRequest, name: str, change: schemas.StatusChange) -> dict[str, int]:
    """Give a new status to the listed messages, or to every message matching the status and property filter."""
    message_class = queue_for(request, name, "change")
    if change.ids is not None:
        return {"changed": update_status(message_class, change.status, pk__in=change.ids)}
    lookups = _check(["body", "filter"], message_lookups, change.filter or {})
    if change.current_status is not None:
        lookups["status"] = change.current_status
    return {"changed": update_status(message_class, change.status, **lookups)}


@router.post("/queues/{name}/cancel", response={200: schemas.Cancelled, **ERRORS})
def cancel_messages(request: HttpRequest, name: str, selection: schemas.CancelRequest) -> dict[str, list[int]]:
    """Cancel the listed messages that are Pending, Sleeping or Leased; a worker holding one can no longer complete
    it, and its job learns of it at its next check."""
    message_class = queue_for(request, name, "change")
    return {"cancelled": cancel(message_class.queue_items().filter(pk__in=selection.ids))}


def _one(message_class: type[QueueMessage], pk: int) -> dict[str, Any]:
    item = message_class.queue_items().filter(pk=pk).values(*FIELDS).first()
    if item is None:
        raise _no_message(message_class, pk)
    return item


def _no_message(message_class: type[QueueMessage], pk: int) -> HttpError:
    return HttpError(404, f"No message {pk} in queue {message_class.queue_name()!r}.")


def _json_object(text: str) -> Any:
    try:
        return loads(text)
    except MalformedJSON as exc:
        raise BadFilter(f"The filter is not strict JSON: {exc}") from exc


def _check(loc: list[str | int], parse: Any, value: Any) -> Any:
    try:
        return parse(value)
    except BadFilter as exc:
        raise field_error([*loc, exc.key] if exc.key is not None else loc, str(exc)) from exc
    except ValueError as exc:
        raise field_error(loc, str(exc)) from exc
