"""Bulk status changes and deletes on the chosen rows, or on every row of the filter result ("select all")."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse

from ..cancelling import CANCELLABLE, cancel
from ..status import Status
from ..updates import update_status
from .forms import StatusForm, suggest_statuses
from .overview import queue_status_suggestions
from .sites import queue_context

_ROW_ID = re.compile(r"[1-9][0-9]{0,18}")
MAX_ID = 2**63 - 1


def not_row_ids(request: HttpRequest) -> list[str]:
    """The values of the action's selection that are not row ids (whole numbers from 1 to 2**63 - 1)."""
    selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
    return [value for value in selected if not _ROW_ID.fullmatch(value) or int(value) > MAX_ID]


def _set_status(model_admin: Any, request: HttpRequest, queryset: QuerySet, status: str) -> int:
    message_class = model_admin.model.message_class
    changed = update_status(message_class, status, pk__in=queryset.order_by().values("pk"))
    model_admin.message_user(request, f"{changed} message(s) set {status}.", messages.SUCCESS)
    return changed


@admin.action(description="Retry: set Pending", permissions=["change"])
def set_pending(model_admin: Any, request: HttpRequest, queryset: QuerySet) -> None:
    """Make the rows Pending again, so that workers lease them."""
    _set_status(model_admin, request, queryset, Status.PENDING)


@admin.action(description="Set a status…", permissions=["change"])
def set_custom_status(model_admin: Any, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
    """Ask for a status (built-in or custom) and say how many rows change, then set it."""
    form = StatusForm(request.POST if "apply" in request.POST else None)
    suggest_statuses(form, queue_status_suggestions(model_admin.model.message_class))
    if form.is_valid():
        _set_status(model_admin, request, queryset, form.cleaned_data["status"])
        return None
    return _confirmation(model_admin, request, queryset, "set_custom_status", form, "Set status of")


@admin.action(description="Delete…", permissions=["delete"])
def delete_messages(model_admin: Any, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
    """Say how many rows go, then delete them in one statement, however many the filter matched."""
    if "apply" not in request.POST:
        return _confirmation(model_admin, request, queryset, "delete_messages", None, "Delete")
    deleted, _ = queryset.delete()
    model_admin.message_user(request, f"{deleted} message(s) deleted.", messages.SUCCESS)
    return None


@admin.action(description="Cancel…", permissions=["change"])
def cancel_messages(model_admin: Any, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
    """Say how many of the rows are Pending, Sleeping or Leased, then cancel those: a worker holding one can no
    longer complete it."""
    if "apply" not in request.POST:
        cancellable = queryset.filter(status__in=CANCELLABLE)
        return _confirmation(model_admin, request, cancellable, "cancel_messages", None, "Cancel", what="cancels")
    cancelled = cancel(queryset)
    model_admin.message_user(request, f"{len(cancelled)} message(s) cancelled.", messages.SUCCESS)
    return None


def _confirmation(
    model_admin: Any, request: HttpRequest, queryset: QuerySet, action: str, form: StatusForm | None, verb: str,
    what: str = "",
) -> TemplateResponse:
    model = model_admin.model
    count = queryset.count()
    context = {
        **model_admin.admin_site.each_context(request),
        **queue_context(model.message_class),
        "title": f"{verb} {count} message{pluralize(count)} of {model.message_class.queue_options.title}?",
        "verb": verb,
        "what": what,
        "form": form,
        "count": count,
        "opts": model._meta,
        "action": action,
        "select_across": request.POST.get("select_across", "0"),
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/nexus_queues/queue/confirm_action.html", context)
