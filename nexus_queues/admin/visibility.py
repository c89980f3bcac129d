"""Which queues a user may see in the admin, and so which of the queues' records (batches, job runs, Spark syncs):
one rule for every page, the queue pages' own view permission."""

from __future__ import annotations

from typing import Any

from django.contrib.admin import AdminSite
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest

from ..messages import QueueMessage
from ..registry import registry
from .changelist import RecordAdmin


def visible_queues(site: AdminSite, request: HttpRequest) -> list[type[QueueMessage]]:
    """The queues on ``site`` the user may view, as their own pages decide (their model admin's view permission)."""
    models = (mc.queue_model for mc in registry)
    return [
        model.message_class for model in models
        if site.is_registered(model) and site.get_model_admin(model).has_view_permission(request)
    ]


class QueueRecordAdmin(RecordAdmin):
    """The admin of records that name their queue in a ``queue`` column: a user sees those of the queues they may
    view, in the list, its filters and search, and on a record's pages, where another queue's answers 404 as a missing
    one does. A superuser sees them all, those of queues no longer defined too (which no permission names)."""

    def extra_queue_names(self, request: HttpRequest) -> list[str]:
        """Values of ``queue`` beyond the visible queues' names whose records the user may view."""
        return []

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """The records of the queues the user may view; every record for a superuser."""
        records = super().get_queryset(request)
        if request.user.is_superuser:
            return records
        names = [message_class.queue_name() for message_class in visible_queues(self.admin_site, request)]
        return records.filter(queue__in=[*names, *self.extra_queue_names(request)])

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Model:
        """The record; 404 when it does not exist or is of a queue the user may not view, the same answer for both."""
        record = super().get_object(request, object_id, from_field)
        if record is None:
            raise Http404(f"No such {self.opts.verbose_name} of a queue you may view.")
        return record
