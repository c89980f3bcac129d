"""The admin page of one queue: change list, message editor, manual enqueue and queue settings."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator

from ..enqueueing import enqueue
from ..exceptions import NexusQueuesError
from ..models import QueueItem
from ..serialization import canonical_json, json_hash
from ..status import Status
from ..updates import set_default_status, set_processing_enabled
from .actions import delete_messages, not_row_ids, set_custom_status, set_pending
from .changelist import QueueChangeList
from .examples import example_message
from .filters import HasErrorFilter, StatusFilter
from .forms import EnqueueForm, MessageJSONField, QueueItemForm, QueueSettingsForm, RowMoved, version_lookups
from .jobs import jobs_page_of
from .overview import queue_overview

STATUS_COLOURS = {
    Status.PENDING: "#2f6fb3", Status.LEASED: "#7a4fb3", Status.PROCESSED: "#2e7d32",
    Status.ERROR: "#c62828", Status.ABANDONED: "#ad5a00", Status.SLEEPING: "#5f6b7a",
}
CUSTOM_STATUS_COLOUR = "#8a6d00"
SUMMARY_LENGTH = 80


def status_badge(status: str) -> str:
    """The status as a coloured label (custom statuses share one colour)."""
    colour = STATUS_COLOURS.get(status, CUSTOM_STATUS_COLOUR)  # type: ignore[call-overload]
    return format_html('<span class="nexus-status" style="background:{}">{}</span>', colour, status)


def pretty_json(data: Any) -> str:
    """JSON in a ``<pre>``, indented, keys sorted."""
    if data is None:
        return "-"
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    return format_html('<pre class="nexus-json">{}</pre>', text)


class QueueItemAdmin(admin.ModelAdmin):
    """Browse, filter, fix and re-run the messages of one queue."""

    form = QueueItemForm
    change_list_template = "admin/nexus_queues/queue/change_list.html"
    change_form_template = "admin/nexus_queues/queue/change_form.html"
    list_display = (
        "id", "message_id", "status_label", "summary", "created_at", "updated_at", "process_at", "attempts",
        "correlation_id",
    )
    list_filter = (StatusFilter, ("created_at", admin.DateFieldListFilter),
                   ("updated_at", admin.DateFieldListFilter), HasErrorFilter)
    search_fields = ("=message_id", "message")
    search_help_text = "Text inside the message JSON, or an exact message id."
    ordering = ("id",)
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    actions = (set_pending, set_custom_status, delete_messages)
    count_limit = 10_000
    """Counts (rows, per status) stop here, so a page never counts a whole big table."""
    fieldsets = (
        (None, {"fields": (("message", "previous_message_json"), "status", "message_id")}),
        ("Timing", {"fields": ("created_at", "updated_at", "process_at", "expires_at", "processed_at", "attempts")}),
        ("Lease", {"fields": ("lease_expires_at", "correlation_id", "job_run")}),
        ("Error", {"fields": ("error_type", "error_message", "error_traceback_text")}),
        ("Stored", {"classes": ("collapse",), "fields": ("headers", "message_hash")}),
    )
    readonly_fields = (
        "previous_message_json", "message_id", "created_at", "updated_at", "process_at", "expires_at",
        "processed_at", "attempts", "lease_expires_at", "correlation_id", "job_run", "error_type", "error_message",
        "error_traceback_text", "headers", "message_hash",
    )

    @admin.display(description="status", ordering="status")
    def status_label(self, item: QueueItem) -> str:
        return status_badge(item.status)

    @admin.display(description="message")
    def summary(self, item: QueueItem) -> str:
        data = item._meta.get_field("message").value_from_object(item)
        if isinstance(data, dict):
            text = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in sorted(data.items()))
        else:
            text = json.dumps(data, ensure_ascii=False)
        return Truncator(text).chars(SUMMARY_LENGTH)

    @admin.display(description="message")
    def message_json(self, item: QueueItem) -> str:
        return pretty_json(item._meta.get_field("message").value_from_object(item))

    @admin.display(description="previous message (last processed)")
    def previous_message_json(self, item: QueueItem) -> str:
        return pretty_json(item._meta.get_field("previous_message").value_from_object(item))

    @admin.display(description="traceback")
    def error_traceback_text(self, item: QueueItem) -> str:
        if not item.error_traceback:
            return "-"
        return format_html('<pre class="nexus-traceback">{}</pre>', item.error_traceback)

    @admin.display(description="job run")
    def job_run(self, item: QueueItem) -> str:
        runs = item.message_class.job_runs()
        run = runs.filter(correlation_id=item.correlation_id).first() if item.correlation_id else None
        if run is None:
            return "-"
        url = reverse(f"{self.admin_site.name}:nexus_queues_jobrun_change", args=[run.pk])
        return format_html('<a href="{}">{}</a>', url, run)

    def get_fieldsets(self, request: HttpRequest, obj: QueueItem | None = None) -> Any:
        """Read-only viewers see the stored JSON as text, even when it no longer fits the class."""
        if self.has_change_permission(request, obj):
            return self.fieldsets
        _message, *rest = self.fieldsets
        return ((None, {"fields": (("message_json", "previous_message_json"), "status", "message_id")}), *rest)

    def get_readonly_fields(self, request: HttpRequest, obj: QueueItem | None = None) -> Any:
        if self.has_change_permission(request, obj):
            return self.readonly_fields
        return ("message_json", "status", *self.readonly_fields)

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "message":
            return MessageJSONField(label="message")
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        """Our delete, which confirms with a count, instead of Django's, which lists every row."""
        # action_location exists from Django 6.1 on; pass it only where Django gave it.
        where = {} if action_location is None else {"action_location": action_location}
        actions = super().get_actions(request, **where)
        actions.pop("delete_selected", None)
        return actions

    def get_search_fields(self, request: HttpRequest) -> tuple[str, ...]:
        """Message ids only where the queue has identity, so the search can use the text index alone."""
        return self.search_fields if self.model.message_class.has_identity else ("message",)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[QueueChangeList]:
        return QueueChangeList

    def save_model(self, request: HttpRequest, obj: QueueItem, form: Any, change: bool) -> None:
        """Write only what the operator changed, and only while the row is as the form showed it, so
        that a worker's changes meanwhile (a lease, a completion) are neither overwritten nor undone."""
        fields = {"message", "status"} & set(form.changed_data)
        if not fields:
            return
        changes: dict[str, Any] = {name: form.cleaned_data[name] for name in fields}
        if "message" in fields:
            changes["message_hash"] = json_hash(canonical_json(form.cleaned_data["message"]))
        if "status" in fields:
            changes["lease_expires_at"] = None
        changes["updated_at"] = timezone.now()
        shown = version_lookups(form.cleaned_data["row_version"])
        if not type(obj)._default_manager.using(obj._state.db).filter(pk=obj.pk, **shown).update(**changes):
            raise RowMoved("This message changed while it was being saved; nothing was saved. Reload the page.")

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """Django's editor, without "save as new" (new messages go through the enqueue form); a row that
        moved during the save sends the operator back to it, with the reason."""
        if "_saveasnew" in request.POST:
            raise SuspiciousOperation("Save as new is not offered: enqueue a new message instead.")
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except RowMoved as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def response_action(
        self, request: HttpRequest, queryset: Any, action_location: Any = None
    ) -> HttpResponse | None:
        """Django's action handling, refusing a selection that holds anything but row ids (a 500 otherwise)."""
        bad = not_row_ids(request)
        if bad:
            self.message_user(request, f"{bad[0]!r} is not a row id; nothing was changed.", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        # action_location exists from Django 6.1 on; pass it only where Django gave it.
        where = {} if action_location is None else {"action_location": action_location}
        return super().response_action(request, queryset, **where)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        overview = queue_overview(self.model.message_class, self.count_limit)
        context = {
            "overview": overview,
            "status_badges": [(s, status_badge(s), n) for s, n in overview.counts.items()],
            "settings_form": QueueSettingsForm(
                initial={"default_status": overview.default_status, "processing_enabled": overview.processing_enabled}
            ),
            "can_change_queue": self.has_change_permission(request),
            "queue_job": self._job_link(),
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    def _job_link(self) -> str:
        page = jobs_page_of(self.admin_site)
        return page.queue_job_link(self.model.message_class) if page else ""

    def get_urls(self) -> list[Any]:
        opts = self.model._meta
        name = f"{opts.app_label}_{opts.model_name}_queue_settings"
        return [path("queue-settings/", self.admin_site.admin_view(self.queue_settings_view), name=name),
                *super().get_urls()]

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Manual enqueue: a form prefilled with the example message."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        message_class = self.model.message_class
        form = EnqueueForm(message_class, request.POST or None, initial={"message": example_message(message_class)})
        if request.method == "POST" and form.is_valid():
            stored = self._enqueue(request, form)
            if stored:
                return HttpResponseRedirect(reverse(f"{self.admin_site.name}:{_url_name(self.model)}_changelist"))
        context = {**self.admin_site.each_context(request), "title": f"Enqueue a {message_class.queue_name()} message",
                   "form": form, "opts": self.model._meta, "queue": message_class.queue_name()}
        return TemplateResponse(request, "admin/nexus_queues/queue/enqueue.html", context)

    def _enqueue(self, request: HttpRequest, form: EnqueueForm) -> bool:
        data = form.cleaned_data
        try:
            result = enqueue(data["message"], at=data["process_at"], status=data["status"])
        except NexusQueuesError as exc:
            form.add_error(None, str(exc))
            return False
        if result.discarded:
            self.message_user(request, "The queue already holds this exact message (idempotent): nothing stored.",
                              messages.WARNING)
        else:
            self.message_user(request, "Message enqueued.", messages.SUCCESS)
        return True

    def queue_settings_view(self, request: HttpRequest) -> HttpResponse:
        """Save the queue's default enqueue status and processing on/off."""
        if request.method != "POST" or not self.has_change_permission(request):
            raise PermissionDenied
        form = QueueSettingsForm(request.POST)
        message_class = self.model.message_class
        if form.is_valid():
            with transaction.atomic(using=message_class.queue_options.database):
                set_default_status(message_class, form.cleaned_data["default_status"])
                set_processing_enabled(message_class, form.cleaned_data["processing_enabled"])
            self.message_user(request, "Queue settings saved.", messages.SUCCESS)
        else:
            errors = "; ".join(f"{field}: {' '.join(map(str, e))}" for field, e in form.errors.items())
            self.message_user(request, f"Queue settings not saved: {errors}", messages.ERROR)
        return HttpResponseRedirect(reverse(f"{self.admin_site.name}:{_url_name(self.model)}_changelist"))


def _url_name(model: type[QueueItem]) -> str:
    return f"{model._meta.app_label}_{model._meta.model_name}"
