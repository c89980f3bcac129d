"""Example messages for the admin's enqueue form."""

from __future__ import annotations

import types
import typing
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any

from django.utils import timezone
from django.utils.module_loading import import_string
from pydantic import BaseModel, ValidationError

from ..conf import settings
from ..messages import QueueMessage

_PLACEHOLDERS: dict[Any, Any] = {
    str: "",
    int: 0,
    float: 0.0,
    bool: False,
    Decimal: Decimal(0),
    timedelta: timedelta(0),
}


def example_message(message_class: type[QueueMessage]) -> QueueMessage:
    """The ``EXAMPLE_FACTORY`` setting's message, else ``get_example_message()``, else one with
    every field at its default or an empty value of its type."""
    if settings.EXAMPLE_FACTORY:
        return import_string(settings.EXAMPLE_FACTORY)(message_class)
    custom = getattr(message_class, "get_example_message", None)
    if callable(custom):
        return custom()
    data = _placeholder_data(message_class)
    try:
        return message_class.model_validate(data)
    except ValidationError:
        return message_class.model_construct(**data)


def _placeholder_data(model: type[BaseModel]) -> dict[str, Any]:
    return {
        field.alias or name: field.get_default(call_default_factory=True)
        if not field.is_required()
        else _placeholder(field.annotation)
        for name, field in model.model_fields.items()
    }


def _placeholder(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return None if type(None) in args else _placeholder(args[0])
    if origin is typing.Literal:
        return args[0]
    if origin is typing.Annotated:
        return _placeholder(args[0])
    if origin in (list, set, frozenset, tuple) or annotation in (list, set, tuple):
        return []
    if origin is dict or annotation is dict:
        return {}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return _placeholder_data(annotation)
        if issubclass(annotation, Enum):
            return next(iter(annotation)).value
        if issubclass(annotation, datetime):
            return timezone.now().isoformat()
        if issubclass(annotation, date):
            return timezone.now().date().isoformat()
        if issubclass(annotation, time):
            return "00:00:00"
        for kind, value in _PLACEHOLDERS.items():
            if issubclass(annotation, kind):
                return value
    return None
