"""Change-list filters of queue tables that their indexes serve."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.db.models import QuerySet
from django.http import HttpRequest

from ..membership import BATCH_HEADER
from ..overview import present_statuses


class StatusFilter(admin.SimpleListFilter):
    """Every status present in the table, custom ones included."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        rows = model_admin.get_queryset(request)
        return [(status, status) for status in present_statuses(rows)]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(status=self.value()) if self.value() else queryset


class HasErrorFilter(admin.SimpleListFilter):
    """Rows that hold an error (kept after a retry until the next error or success)."""

    title = "has error"
    parameter_name = "has_error"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        # error_type > '' rather than != '': a range an index on error_type can serve, where there is one.
        if self.value() == "yes":
            return queryset.filter(error_type__gt="")
        if self.value() == "no":
            return queryset.filter(error_type="")
        return queryset


class BatchFilter(admin.SimpleListFilter):
    """The members of the batch ``?batch=<id>`` names (the batches' admin links here); shown only then, so that
    other views of the page make no query for it."""

    title = "batch"
    parameter_name = "batch"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        value = request.GET.get(self.parameter_name)
        return [(value, f"batch {value}")] if value else []

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if not value:
            return queryset
        if not value.isdigit():
            raise IncorrectLookupParameters(f"A batch is named by its id, not {value!r}.")
        return queryset.filter(**{f"headers__{BATCH_HEADER}": int(value)})
