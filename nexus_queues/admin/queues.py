"""The admin page of one queue: change list, message editor, manual enqueue and queue settings."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.text import Truncator

from ..enqueueing import enqueue
from ..exceptions import NexusQueuesError, RowMoved
from ..jobs.control import set_processing_enabled
from ..limits import unstorable_text
from ..models import QueueItem
from ..overview import queue_overview
from ..permissions import may
from ..serialization import canonical_json, json_hash
from ..status import Status
from ..updates import set_default_status
from .actions import cancel_messages, delete_messages, not_row_ids, set_custom_status, set_pending
from .changelist import BigTableChangeList
from .examples import example_message
from .filters import BatchFilter, HasErrorFilter, StatusFilter
from .forms import (
    EnqueueForm,
    MessageJSONField,
    QueueItemForm,
    QueueSettingsForm,
    StatusField,
    StatusInput,
    suggest_statuses,
    version_lookups,
)
from .job_runs import with_seconds
from .jobs import jobs_page_of
from .overview import queue_status_suggestions, status_suggestions
from .sites import admin_url, dashboard_of, queue_context, section_of
from .times import MessageTimes

STATUS_COLOURS = {
    Status.PENDING: "#2f6fb3", Status.LEASED: "#7a4fb3", Status.PROCESSED: "#2e7d32",
    Status.ERROR: "#c62828", Status.ABANDONED: "#ad5a00", Status.SLEEPING: "#5f6b7a",
    Status.CANCELLED: "#6d4c41",
}
CUSTOM_STATUS_COLOUR = "#8a6d00"
SUMMARY_LENGTH = 80
SHORT_ID_LENGTH = 8
"""The change list shows this much of a correlation id; the whole id is the link's title."""


def status_badge(status: str) -> str:
    """The status as a coloured label (custom statuses share one colour)."""
    colour = STATUS_COLOURS.get(status, CUSTOM_STATUS_COLOUR)  # type: ignore[call-overload]
    return format_html('<span class="nexus-status" style="background:{}">{}</span>', colour, status)


def short_type(error_type: str) -> str:
    """``builtins.ValueError`` -> ``ValueError``: the class name without its module."""
    return error_type.rsplit(".", 1)[-1]


def stacked_time(moment: datetime | None) -> str:
    """A time to the second, the date above the time, for narrow columns; "-" for none."""
    if moment is None:
        return "-"
    day, time = with_seconds(moment).split(" ")
    return format_html("{}<br>{}", day, time)


def pretty_json(data: Any) -> str:
    """JSON in a ``<pre>``, indented, keys sorted."""
    if data is None:
        return "-"
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    return format_html('<pre class="nexus-json">{}</pre>', text)


class QueueItemAdmin(MessageTimes, admin.ModelAdmin):
    """Browse, filter, fix and re-run the messages of one queue."""

    form = QueueItemForm
    change_list_template = "admin/nexus_queues/queue/change_list.html"
    change_form_template = "admin/nexus_queues/queue/change_form.html"
    delete_confirmation_template = "admin/nexus_queues/queue/delete_confirmation.html"
    object_history_template = "admin/nexus_queues/queue/object_history.html"
    # Narrow columns and a wide summary, to fit a 1400 px window beside the side bar and the filters. The rest
    # (created, process-at, attempts, expiry, the whole correlation id, the error) is on the message's page.
    list_display: tuple[str, ...] = ("id", "message_id", "status_label", "summary", "updated", "job_run_link")
    list_filter = (StatusFilter, ("created_at", admin.DateFieldListFilter),
                   ("updated_at", admin.DateFieldListFilter), HasErrorFilter, BatchFilter)
    # exact, not "=" (iexact): UPPER(message_id) is in no index, and it would make the search read the table.
    search_fields: ClassVar[tuple[str, ...]] = ("message_id__exact", "message")
    search_help_text = "Text inside the message JSON, or an exact message id."
    ordering = ("id",)
    show_facets = admin.ShowFacets.NEVER
    actions = (set_pending, cancel_messages, set_custom_status, delete_messages)
    count_limit = 10_000
    """Counts (rows, per status) stop here, so a page never counts a whole big table."""
    fieldsets: ClassVar[tuple[tuple[str | None, Any], ...]] = (
        (None, {"fields": (("message", "previous_message_json"), "status", "message_id")}),
        ("Timing", {"fields": ("created_at_text", "updated_at_text", "process_at_text", "expires_at_text",
                               "processed_at_text", "attempts")}),
        ("Lease", {"fields": ("lease_expires_at_text", "correlation_id", "job_run")}),
        ("Error", {"fields": ("error_type", "error_message", "error_traceback_text")}),
        ("Stored", {"classes": ("collapse",), "fields": ("headers", "message_hash")}),
    )
    readonly_fields: ClassVar[tuple[str, ...]] = (
        "previous_message_json", "message_id", "created_at_text", "updated_at_text", "process_at_text",
        "expires_at_text", "processed_at_text", "attempts", "lease_expires_at_text", "correlation_id", "job_run",
        "error_type", "error_message", "error_traceback_text", "headers", "message_hash",
    )

    @admin.display(description="status", ordering="status")
    def status_label(self, item: QueueItem) -> str:
        """The badge; an Error row's exception type, a Sleeping row's time, beside it."""
        badge = status_badge(item.status)
        if item.status == Status.ERROR and item.error_type:
            return format_html('{} <span class="nexus-error-type" title="{}: {}">{}</span>', badge, item.error_type,
                               Truncator(item.error_message).chars(200), short_type(item.error_type))
        if item.status == Status.SLEEPING and item.process_at:
            return format_html('{} <span class="nexus-until" title="until {}">until {}</span>', badge,
                               with_seconds(item.process_at), with_seconds(item.process_at))
        return badge

    @admin.display(description="updated", ordering="updated_at")
    def updated(self, item: QueueItem) -> str:
        """The last change, the date above the time."""
        return stacked_time(item.updated_at)

    @admin.display(description="job run")
    def job_run_link(self, item: QueueItem) -> str:
        """The run that last leased the message, by the start of its correlation id."""
        if not item.correlation_id:
            return "-"
        short = Truncator(item.correlation_id).chars(SHORT_ID_LENGTH + 1)
        try:
            url = admin_url(self.admin_site, self.model, "job_run", item.correlation_id)
        except NoReverseMatch:
            return format_html('<span title="{}">{}</span>', item.correlation_id, short)
        return format_html('<a href="{}" title="job run {}">{}</a>', url, item.correlation_id, short)

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

    def get_list_display(self, request: HttpRequest) -> Any:
        """The message id only where the queue has identity."""
        if self.model.message_class.has_identity:
            return self.list_display
        return tuple(name for name in self.list_display if name != "message_id")

    def get_fieldsets(self, request: HttpRequest, obj: QueueItem | None = None) -> Any:
        """Read-only viewers see the stored JSON as text, even when it no longer fits the class. An error kept
        from an earlier attempt is titled "Last error", never shown as the current one."""
        message, *rest = self.fieldsets
        if not self.has_change_permission(request, obj):
            message = (None, {"fields": (("message_json", "previous_message_json"), "status", "message_id")})
        shown = [message, *(self._error_fieldset(obj, options) if name == "Error" else (name, options)
                            for name, options in rest)]
        if obj is not None and obj.status == Status.ERROR:  # what failed first, above the message and the fold
            shown.sort(key=lambda fieldset: fieldset[0] != "Error")
        return tuple(shown)

    def _error_fieldset(self, obj: QueueItem | None, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if obj is None or obj.status == Status.ERROR or not obj.error_type:
            return "Error", options
        note = (f"Not the current state: the message is {obj.status} now. This is what failed on an earlier "
                "attempt; it stays until the message is processed or fails again.")
        classes = (*options.get("classes", ()), "nexus-last-error")
        return "Last error", {**options, "description": note, "classes": classes}

    def get_readonly_fields(self, request: HttpRequest, obj: QueueItem | None = None) -> Any:
        if self.has_change_permission(request, obj):
            return self.readonly_fields
        return ("message_json", "status", *self.readonly_fields)

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "message":
            return MessageJSONField(label="message")
        if db_field.name == "status":
            return StatusField(widget=StatusInput(queue_status_suggestions(self.model.message_class)))
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

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[BigTableChangeList]:
        return BigTableChangeList

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Django's rule (view, or change), from the one function the API decides by too."""
        return may(request.user, "view", self.model)

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
        context = {**queue_context(self.model.message_class), "title": self.model.message_class.queue_options.title,
                   "subtitle": f"Message #{object_id}", **(extra_context or {})}
        try:
            return super().changeform_view(request, object_id, form_url, context)
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

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = queue_context(self.model.message_class)
        return super().delete_view(request, object_id, {**context, **(extra_context or {})})

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = {**queue_context(self.model.message_class), "title": f"Change history: message #{object_id}"}
        return super().history_view(request, object_id, {**context, **(extra_context or {})})

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        overview = queue_overview(self.model.message_class, self.count_limit)
        settings_form = QueueSettingsForm(
            initial={"default_status": overview.default_status, "processing_enabled": overview.processing_enabled}
        )
        suggest_statuses(settings_form, status_suggestions(overview.counts, overview.default_status), "default_status")
        context = {
            **queue_context(self.model.message_class),
            "title": self.model.message_class.queue_options.title,
            "overview": overview,
            "status_badges": [(s, status_badge(s), n) for s, n in overview.counts.items()],
            "settings_form": settings_form,
            "can_change_queue": self.has_change_permission(request),
            "queue_job": self._job_link(),
            "dashboard_url": self._dashboard_url(),
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    def _dashboard_url(self) -> str:
        """The dashboard's page of the queue's category ("" when the site serves no dashboard)."""
        dashboard = dashboard_of(self.admin_site)
        return dashboard.url(section_of(self.model.message_class)) if dashboard else ""

    def _job_link(self) -> str:
        page = jobs_page_of(self.admin_site)
        return page.queue_job_link(self.model.message_class) if page else ""

    def get_urls(self) -> list[Any]:
        opts = self.model._meta
        name = f"{opts.app_label}_{opts.model_name}"
        view = self.admin_site.admin_view
        return [path("queue-settings/", view(self.queue_settings_view), name=f"{name}_queue_settings"),
                path("job-run/<str:correlation_id>/", view(self.job_run_view), name=f"{name}_job_run"),
                *super().get_urls()]

    def job_run_view(self, request: HttpRequest, correlation_id: str) -> HttpResponse:
        """The page of the run with this correlation id; its messages, saying so, when the run is not recorded
        (deleted, or written to no database this site reads)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if unstorable_text(correlation_id):  # no run has it, and PostgreSQL refuses NUL even in a WHERE clause
            raise Http404(f"No job run with correlation id {correlation_id!r}.")
        run = self.model.message_class.job_runs().filter(correlation_id=correlation_id).values_list("pk").first()
        if run is not None:
            try:
                return HttpResponseRedirect(reverse(f"{self.admin_site.name}:nexus_queues_jobrun_change", args=run))
            except NoReverseMatch:
                pass
        else:
            self.message_user(request, f"No job run with correlation id {correlation_id} is recorded; here are the "
                                       "messages it leased.", messages.WARNING)
        changelist = admin_url(self.admin_site, self.model, "changelist")
        return HttpResponseRedirect(f"{changelist}?{urlencode({'correlation_id': correlation_id})}")

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Manual enqueue: a form prefilled with the example message."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        message_class = self.model.message_class
        form = EnqueueForm(message_class, request.POST or None, initial={"message": example_message(message_class)})
        suggest_statuses(form, queue_status_suggestions(message_class))
        if request.method == "POST" and form.is_valid():
            stored = self._enqueue(request, form)
            if stored:
                return HttpResponseRedirect(admin_url(self.admin_site, self.model, "changelist"))
        context = {**self.admin_site.each_context(request), **queue_context(self.model.message_class),
                   "title": f"Enqueue a message: {message_class.queue_options.title}", "form": form,
                   "opts": self.model._meta, "queue": message_class.queue_name()}
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
        return HttpResponseRedirect(admin_url(self.admin_site, self.model, "changelist"))

