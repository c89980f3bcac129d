"""Forms of the queue admin; each validates fully before anything is written."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django import forms
from pydantic import ValidationError as PydanticError

from ..exceptions import InvalidMessage, InvalidStatus, MalformedJSON, UnstorableValue
from ..exceptions import RowMoved as RowMoved  # its old home, kept importable
from ..json_input import loads
from ..limits import check_datetime, unstorable_text
from ..messages import QueueMessage, message_id_of, validation_summary
from ..serialization import canonical_json
from ..status import MAX_STATUS_LENGTH, Status, validate_settable_status

if TYPE_CHECKING:
    from ..models import QueueItem

_MONOSPACE = {"rows": 18, "cols": 70, "class": "vLargeTextField nexus-json", "spellcheck": "false"}


def row_version(item: QueueItem) -> str:
    """What shows that a row moved since a form showed it: its status, last change and lease."""
    return json.dumps([item.status, item.updated_at.isoformat(), item.correlation_id])


def version_lookups(version: str) -> dict[str, Any]:
    """Lookups that match the row only while it is still at ``version``."""
    status, updated_at, correlation_id = json.loads(version)
    return {"status": status, "updated_at": datetime.fromisoformat(updated_at), "correlation_id": correlation_id}


class MessageJSONField(forms.JSONField):
    """JSON text shown pretty-printed with sorted keys, read strictly (no NaN, lone surrogates, NUL)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(widget=forms.Textarea(attrs=_MONOSPACE), **kwargs)

    def to_python(self, value: Any) -> Any:
        if not isinstance(value, str) or value in self.empty_values:
            return super().to_python(value)
        try:
            data = loads(value)
        except MalformedJSON as exc:
            raise forms.ValidationError(f"Enter a valid JSON: {exc}", code="invalid") from exc
        return forms.fields.JSONString(data) if isinstance(data, str) else data

    def bound_data(self, data: Any, initial: Any) -> Any:
        if self.disabled or data is None:
            return super().bound_data(data, initial)
        try:
            return loads(data)
        except MalformedJSON:
            return forms.fields.InvalidJSONInput(data)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        if isinstance(value, QueueMessage):
            value = value.model_dump(mode="json", by_alias=True)
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
        # A lone surrogate in refused input cannot be sent as UTF-8: show it escaped.
        return text if unstorable_text(text) is None else json.dumps(value, indent=2, sort_keys=True)


class StatusInput(forms.TextInput):
    """A text box suggesting statuses (an HTML datalist) that still takes any text, a new custom status too."""

    template_name = "admin/nexus_queues/widgets/status_input.html"

    def __init__(self, suggestions: Sequence[str] = (), attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.suggestions = list(suggestions)

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        widget = context["widget"]
        widget["list_id"] = f"{widget['attrs'].get('id') or name}_suggestions"
        widget["attrs"].update({"list": widget["list_id"], "autocomplete": "off"})
        widget["suggestions"] = self.suggestions
        return context


class StatusField(forms.CharField):
    """A status typed by an operator, with suggestions (set ``widget.suggestions``)."""

    widget = StatusInput

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=MAX_STATUS_LENGTH, **kwargs)


def suggest_statuses(form: forms.BaseForm, suggestions: Sequence[str], field: str = "status") -> None:
    """Offer ``suggestions`` in the form's status field."""
    form.fields[field].widget.suggestions = list(suggestions)  # type: ignore[attr-defined]


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
    """A stored message: its JSON (validated against the message class) and its status.

    The form carries the row's version as it showed it, and saves only over that version.
    """

    message = MessageJSONField()
    row_version = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["row_version"].initial = row_version(self.instance)

    def clean_message(self) -> Any:
        message = validated_message(self._meta.model.message_class, self.cleaned_data["message"])
        if "message" in self.changed_data and self.instance.status == Status.LEASED:
            raise forms.ValidationError("A worker holds this message (Leased); edit it once the lease ends.")
        try:
            message_id = message_id_of(message)
            text = canonical_json(message)
        except (InvalidMessage, TypeError) as exc:
            raise forms.ValidationError(str(exc)) from exc
        if message_id != self.instance.message_id:
            raise forms.ValidationError(
                f"The message id is this row's identity ({self.instance.message_id!r}); "
                "enqueue a new message to store another id."
            )
        return json.loads(text)

    def clean_status(self) -> str:
        status = self.cleaned_data["status"]
        return settable_status(status) if "status" in self.changed_data else status

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        shown = data.get("row_version")
        if not shown:
            raise forms.ValidationError("This form does not say which version of the message it showed. "
                                        "Reload the page; nothing was saved.")
        if shown != row_version(self.instance):
            raise forms.ValidationError(
                f"This message changed since this page was opened: it is {self.instance.status} now, last changed "
                f"{self.instance.updated_at:%Y-%m-%d %H:%M:%S}. Reload the page to see it; nothing was saved."
            )
        return data


class EnqueueForm(forms.Form):
    """A new message for one queue, optionally scheduled or with a status."""

    message = MessageJSONField()
    process_at = forms.DateTimeField(
        required=False, label="Schedule for",
        help_text="Leave empty to make it available now; a time makes it Sleeping until then.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    status = StatusField(
        required=False, help_text="Leave empty for the queue's default enqueue status; or e.g. Pending, OnHold.",
    )

    def __init__(self, message_class: type[QueueMessage], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.message_class = message_class

    def clean_message(self) -> QueueMessage:
        return validated_message(self.message_class, self.cleaned_data["message"])

    def clean_process_at(self) -> datetime | None:
        at = self.cleaned_data["process_at"]
        if at is not None:
            try:
                check_datetime("process_at", at)
            except UnstorableValue as exc:
                raise forms.ValidationError(exc.problem) from exc
        return at

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

    status = StatusField(help_text="A built-in status (e.g. Pending) or your own (e.g. OnHold).")

    def clean_status(self) -> str:
        return settable_status(self.cleaned_data["status"])


class QueueSettingsForm(forms.Form):
    """The queue's default enqueue status and whether workers process it."""

    default_status = StatusField(label="Default enqueue status")
    processing_enabled = forms.BooleanField(required=False, label="Processing on")

    def clean_default_status(self) -> str:
        return settable_status(self.cleaned_data["default_status"])
