"""Forms of the queue admin; each validates fully before anything is written."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from pydantic import ValidationError as PydanticError

from ..exceptions import InvalidMessage, InvalidStatus
from ..messages import QueueMessage, message_id_of, validation_summary
from ..serialization import canonical_json, unstorable_text
from ..status import Status, validate_settable_status

_MONOSPACE = {"rows": 18, "cols": 70, "class": "vLargeTextField nexus-json", "spellcheck": "false"}


class MessageJSONField(forms.JSONField):
    """JSON text shown pretty-printed with sorted keys."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(widget=forms.Textarea(attrs=_MONOSPACE), **kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        if isinstance(value, QueueMessage):
            value = value.model_dump(mode="json", by_alias=True)
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
        # A lone surrogate in refused input cannot be sent as UTF-8: show it escaped.
        return text if unstorable_text(text) is None else json.dumps(value, indent=2, sort_keys=True)


def validated_message(message_class: type[QueueMessage], data: Any) -> QueueMessage:
    """The message ``data`` makes, or a form error naming each field that does not fit."""
    try:
        return message_class.model_validate(data)
    except PydanticError as exc:
        raise forms.ValidationError(f"Not a valid {message_class.__name__}: {validation_summary(exc)}") from exc


def settable_status(status: str) -> str:
    """``status`` if an operator may set it, else a form error saying why."""
    try:
        return validate_settable_status(status)
    except InvalidStatus as exc:
        raise forms.ValidationError(str(exc)) from exc


class QueueItemForm(forms.ModelForm):
    """A stored message: its JSON (validated against the message class) and its status."""

    message = MessageJSONField()

    def clean_message(self) -> Any:
        message = validated_message(self._meta.model.message_class, self.cleaned_data["message"])
        if "message" in self.changed_data and self.instance.status == Status.LEASED:
            raise forms.ValidationError("A worker holds this message (Leased); edit it once the lease ends.")
        try:
            message_id = message_id_of(message)
        except InvalidMessage as exc:
            raise forms.ValidationError(str(exc)) from exc
        if message_id != self.instance.message_id:
            raise forms.ValidationError(
                f"The message id is this row's identity ({self.instance.message_id!r}); "
                "enqueue a new message to store another id."
            )
        try:
            return json.loads(canonical_json(message))
        except InvalidMessage as exc:  # NaN, NUL, ... that not every engine stores
            raise forms.ValidationError(str(exc)) from exc

    def clean_status(self) -> str:
        status = self.cleaned_data["status"]
        return settable_status(status) if "status" in self.changed_data else status


class EnqueueForm(forms.Form):
    """A new message for one queue, optionally scheduled or with a status."""

    message = MessageJSONField()
    process_at = forms.DateTimeField(
        required=False, label="Schedule for",
        help_text="Leave empty to make it available now; a time makes it Sleeping until then.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    status = forms.CharField(
        required=False, max_length=50,
        help_text="Leave empty for the queue's default enqueue status; or e.g. Pending, OnHold.",
    )

    def __init__(self, message_class: type[QueueMessage], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.message_class = message_class

    def clean_message(self) -> QueueMessage:
        return validated_message(self.message_class, self.cleaned_data["message"])

    def clean_status(self) -> str | None:
        status = self.cleaned_data["status"]
        return settable_status(status) if status else None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("status") and data.get("process_at"):
            raise forms.ValidationError("A scheduled message is Sleeping until its time: give a status or a time.")
        return data


class StatusForm(forms.Form):
    """The status to set on the chosen messages."""

    status = forms.CharField(max_length=50, help_text="A built-in status (e.g. Pending) or your own (e.g. OnHold).")

    def clean_status(self) -> str:
        return settable_status(self.cleaned_data["status"])


class QueueSettingsForm(forms.Form):
    """The queue's default enqueue status and whether workers process it."""

    default_status = forms.CharField(max_length=50, label="Default enqueue status")
    processing_enabled = forms.BooleanField(required=False, label="Processing on")

    def clean_default_status(self) -> str:
        return settable_status(self.cleaned_data["default_status"])
