"""Change-list filters of queue tables that their indexes serve."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

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
