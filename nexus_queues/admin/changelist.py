"""A change list for big tables (queues, job runs): it reads one page and counts no further than it must."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.db import NotSupportedError
from django.http import HttpRequest

from ..counting import count_up_to

MAX_ROWS = 2**63 - 1
"""No table holds more rows than its ids count: a signed 64-bit integer, every engine's limit for LIMIT/OFFSET."""


class CheckedChangeList(ChangeList):
    """Django's change list, taking lookup values no engine can compare as a bad lookup (back to the list)."""

    def __init__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        for key, values in request.GET.lists():
            if any("\x00" in text for text in (key, *values)):
                raise IncorrectLookupParameters(f"Query parameter {key!r} holds a NUL character.")
        super().__init__(request, *args, **kwargs)

    def get_results(self, request: HttpRequest) -> None:
        # Raised while the query is built, before it runs: a lookup this engine lacks (JSON contains
        # on SQLite), a time that leaves the years 1-9999 once converted to UTC.
        try:
            self.read_results(request)
        except (NotSupportedError, OverflowError) as exc:
            raise IncorrectLookupParameters(str(exc)) from exc

    def read_results(self, request: HttpRequest) -> None:
        """Read the page of results and the counts (Django's ``get_results``)."""
        super().get_results(request)


class RecordAdmin(admin.ModelAdmin):
    """The admin of rows the workers write (job runs, worker processes): listed and read, never added or changed."""

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[CheckedChangeList]:
        return CheckedChangeList

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class BigTableChangeList(CheckedChangeList):
    """Reads the page plus one row; counts only when there is more, and then only up to the admin's
    ``count_limit``. Its template shows previous and next links, not page numbers (``paginator.html``)."""

    has_next_page = False

    def read_results(self, request: HttpRequest) -> None:
        per_page = self.list_per_page
        offset = (max(self.page_num, 1) - 1) * per_page
        if offset + per_page + 1 > MAX_ROWS:
            raise IncorrectLookupParameters(f"Page {self.page_num} is past the last row any table can hold.")
        rows = list(self.queryset[offset : offset + per_page + 1])
        if offset and not rows:
            raise IncorrectLookupParameters(f"Page {self.page_num} is past the last row.")
        self.has_next_page = len(rows) > per_page
        self.result_list = rows[:per_page]
        if self.has_next_page:
            limit = max(self.model_admin.count_limit, offset + per_page + 1)  # type: ignore[attr-defined]
            self.result_count = count_up_to(self.queryset, limit)
        else:
            self.result_count = offset + len(self.result_list)
        self.full_result_count = None
        self.show_full_result_count = False
        self.show_admin_actions = True
        self.can_show_all = False
        self.multi_page = offset > 0 or self.has_next_page
