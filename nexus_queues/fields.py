"""``MessageField``: a JSON column read back as the queue's typed message."""

from __future__ import annotations

from typing import Any

from django.db import models

from .serialization import MessageEncoder


class MessageDescriptor:
    """Stores the raw JSON data; hands out the typed message, validated on first access."""

    def __init__(self, field: MessageField) -> None:
        self.field = field

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        name = self.field.attname
        if name not in instance.__dict__:
            instance.refresh_from_db(fields=[name])
        value = instance.__dict__[name]
        if value is None or isinstance(value, instance.message_class):
            return value
        message = instance.message_class.from_stored(value, queue_item=instance)
        instance.__dict__[name] = message
        return message

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self.field.attname] = value


class MessageField(models.JSONField):
    """A JSON column whose attribute is the typed message of the model's queue.

    The raw data stays reachable through :meth:`value_from_object`, so the admin and
    serializers can show a message that no longer fits its class.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["encoder"] = MessageEncoder
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("encoder", None)
        return name, path, args, kwargs

    def contribute_to_class(self, cls: Any, name: str, private_only: bool = False) -> None:
        super().contribute_to_class(cls, name, private_only)
        setattr(cls, self.attname, MessageDescriptor(self))

    def value_from_object(self, obj: Any) -> Any:
        return obj.__dict__.get(self.attname)

    def pre_save(self, model_instance: Any, add: bool) -> Any:
        return self.value_from_object(model_instance)
