"""The app's models: the queue table's row (:class:`QueueItem`), the per-queue models made from message classes,
and the runtime settings each queue keeps in the database, here; the live processes, the throughput minutes and the
API tokens in this package's other modules."""

from __future__ import annotations

import hashlib
import sys
import warnings
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from django.apps import apps
from django.db import models, router, transaction
from django.db.models import Q

from .. import membership, updates
from ..backends import backend_for
from ..exceptions import ConfigurationError
from ..fields import MessageField
from ..status import MAX_STATUS_LENGTH, Status
from .api_tokens import ApiToken as ApiToken
from .batches import Batch as Batch
from .flow import LimitedStart as LimitedStart
from .flow import LimitTurn as LimitTurn
from .processes import WorkerProcess as WorkerProcess
from .processes import WorkerProcessQueue as WorkerProcessQueue
from .throughput import QueueMinute as QueueMinute

if TYPE_CHECKING:
    from ..messages import QueueMessage


class QueueItemQuerySet(models.QuerySet):
    """Queue rows, with one method per status; their writes keep the batches' counters (:mod:`.membership`)."""

    def update(self, **values: Any) -> int:
        """Update the rows; when ``values`` set a status, the batch members it moves count in their batches."""
        return membership.updating(self, values) if "status" in values else super().update(**values)

    def update_unfinished(self, **values: Any) -> int:
        """``update()`` of rows held to statuses not finished, to another such status (a claim, a dispatch, an
        abandon): it moves no batch counter, so it looks up no member. The caller's filter holds the rows so."""
        if values.get("status") in membership.FINISHED:
            raise ValueError(f"{values['status']} is finished: its moves count in batches, so write it with update().")
        return super().update(**values)

    def delete(self) -> tuple[int, dict[str, int]]:
        """Delete the rows; the batch members among them not finished yet count Cancelled in their batches."""
        deleted = membership.deleting(self)
        return deleted, {self.model._meta.label: deleted} if deleted else {}

    def with_status(self, status: str) -> QueueItemQuerySet:
        """Rows in ``status``."""
        return self.filter(status=status)

    def pending(self) -> QueueItemQuerySet:
        """Rows waiting to be leased."""
        return self.filter(status=Status.PENDING)

    def in_line(self) -> QueueItemQuerySet:
        """Pending rows in the order leases take them (the model's ``lease_ordering``, which the status index
        serves): the first is first in line."""
        return self.pending().order_by(*self.model.lease_ordering)  # type: ignore[attr-defined]

    def leased(self) -> QueueItemQuerySet:
        """Rows a worker holds."""
        return self.filter(status=Status.LEASED)

    def errors(self) -> QueueItemQuerySet:
        """Rows whose processing failed."""
        return self.filter(status=Status.ERROR)

    def sleeping(self) -> QueueItemQuerySet:
        """Rows scheduled for later."""
        return self.filter(status=Status.SLEEPING)

    def due(self, now: datetime) -> QueueItemQuerySet:
        """Sleeping rows whose time has come."""
        return self.sleeping().filter(process_at__lte=now)

    def lease_expired(self, now: datetime) -> QueueItemQuerySet:
        """Leased rows whose lease ran out."""
        return self.leased().filter(lease_expires_at__lt=now)


class QueueItem(models.Model):
    """One message in a queue table: the message JSON plus the state that steers it."""

    id = models.BigAutoField(primary_key=True)
    # NULL, not "": queues without identity have no id, and the unique index must allow many.
    message_id = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    message = MessageField()
    previous_message = MessageField(null=True, blank=True)
    message_hash = models.CharField(max_length=64, editable=False)
    headers = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=MAX_STATUS_LENGTH, default=Status.PENDING.value)
    process_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    correlation_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001  (NULL: never leased)
    # Database defaults too, so that enqueue statements leave these columns out.
    attempts = models.PositiveIntegerField(default=0, db_default=0)
    error_type = models.CharField(max_length=255, blank=True, default="", db_default="")
    error_message = models.TextField(blank=True, default="", db_default="")
    error_traceback = models.TextField(blank=True, default="", db_default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    processed_at = models.DateTimeField(null=True, blank=True)

    objects = QueueItemQuerySet.as_manager()

    message_class: ClassVar[type[QueueMessage]]
    lease_ordering: ClassVar[tuple[str, ...]] = ("id",)
    """The order leases take Pending rows in (FIFO); also the columns after ``status`` in the status index."""
    admin_class: ClassVar[str] = "nexus_queues.admin.QueueItemAdmin"
    """The dotted path of the ``ModelAdmin`` that :func:`~nexus_queues.admin.register_queues` gives the model."""

    class Meta:
        abstract = True
        ordering = ("id",)

    def __str__(self) -> str:
        return f"{self.message_class.queue_name()} #{self.pk} ({self.status})"

    def save(
        self, *args: Any, using: str | None = None, update_fields: Iterable[str] | None = None, **kwargs: Any
    ) -> None:
        """Save the row; a stored row's status is written first by :meth:`QueueItemQuerySet.update`, in the same
        transaction, so that a batch member's move counts."""
        writes_status = update_fields is None or "status" in update_fields
        if self.pk is None or kwargs.get("force_insert") or not writes_status:
            return super().save(*args, using=using, update_fields=update_fields, **kwargs)
        using = using or self._state.db or router.db_for_write(type(self), instance=self)
        with transaction.atomic(using=using):
            type(self).objects.using(using).filter(pk=self.pk).update(status=self.status)
            super().save(*args, using=using, update_fields=update_fields, **kwargs)

    def delete(self, using: str | None = None, keep_parents: bool = False) -> tuple[int, dict[str, int]]:
        """Delete the row as :meth:`QueueItemQuerySet.delete` does: a batch member not finished counts Cancelled."""
        return type(self).objects.using(using or self._state.db).filter(pk=self.pk).delete()

    def mark_processed(self) -> bool:
        """Deprecated: call ``nexus_queues.mark_processed([item])``."""
        return bool(updates.mark_processed(_deprecated([self], "mark_processed", "items")))

    def mark_error(self, exc: BaseException) -> bool:
        """Deprecated: call ``nexus_queues.mark_error([item], exc)``."""
        return bool(updates.mark_error(_deprecated([self], "mark_error", "items, exc"), exc))

    def reschedule(self, at: datetime) -> bool:
        """Deprecated: call ``nexus_queues.reschedule([item], at)``."""
        return bool(updates.reschedule(_deprecated([self], "reschedule", "items, at"), at))

    def set_status(self, status: str) -> bool:
        """Deprecated: call ``nexus_queues.set_status([item], status)``."""
        return bool(updates.set_status(_deprecated([self], "set_status", "items, status"), status))


def _deprecated(items: list[QueueItem], method: str, arguments: str) -> list[QueueItem]:
    warnings.warn(
        f"QueueItem.{method}() is deprecated and goes in the next release: call nexus_queues.{method}({arguments}), "
        "which changes a whole batch in one statement and returns the ids it changed.",
        DeprecationWarning,
        stacklevel=3,
    )
    return items


class PartialIndex(models.Index):
    """An index limited to the rows matching ``where`` on engines with partial indexes, and a
    plain index on the others (MariaDB/MySQL), so that rows outside it cost nothing to insert."""

    def __init__(self, *, where: Q, **kwargs: Any) -> None:
        self.where = where
        super().__init__(**kwargs)

    def deconstruct(self) -> Any:
        path, args, kwargs = super().deconstruct()
        return path, args, {**kwargs, "where": self.where}

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        index: models.Index = self
        if backend_for(schema_editor.connection.alias).features.has_partial_indexes:
            index = models.Index(fields=self.fields, name=self.name, condition=self.where)
        return models.Index.create_sql(index, model, schema_editor, using, **kwargs)


class QueueSettingsQuerySet(models.QuerySet):
    """Queues' run-time settings rows."""

    def processing_enabled(self) -> bool:
        """Is processing on? True unless a row says otherwise."""
        return self.values_list("processing_enabled", flat=True).first() is not False


class QueueSettings(models.Model):
    """A queue's settings that operators change at run time."""

    queue = models.CharField(max_length=40, primary_key=True)
    default_status = models.CharField(max_length=MAX_STATUS_LENGTH, default=Status.PENDING.value)
    processing_enabled = models.BooleanField(default=True)
    start_requested_at = models.DateTimeField(
        null=True, blank=True, help_text="When processing was last asked to start now, whatever the job's schedule"
    )
    updated_at = models.DateTimeField(auto_now=True)

    objects = QueueSettingsQuerySet.as_manager()

    class Meta:
        db_table = "nexus_queue_settings"
        verbose_name_plural = "queue settings"

    def __str__(self) -> str:
        return self.queue


class PeriodicJobSettings(models.Model):
    """A periodic job's settings that operators change at run time."""

    job = models.CharField(max_length=200, primary_key=True)
    enabled = models.BooleanField(default=True)
    ticks_since = models.DateTimeField(help_text="Ticks up to this time are handled: the last one claimed, or when "
                                                 "the job was first seen or last switched on")
    run_requested_at = models.DateTimeField(null=True, blank=True, help_text="When a run was last asked for")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "nexus_periodic_job_settings"
        verbose_name = "periodic job"
        verbose_name_plural = "periodic jobs"

    def __str__(self) -> str:
        return self.job


class JobRun(models.Model):
    """One run of a job: for a queue job, what it leased and what became of it; for a periodic job, its tick and
    outcome. The unique (job, tick) row is a periodic run's claim, committed before it runs."""

    job = models.CharField(max_length=200)
    queue = models.CharField(max_length=40, blank=True, help_text="Empty for a periodic job")
    correlation_id = models.CharField(max_length=64, unique=True)
    worker = models.CharField(max_length=255, help_text="host:pid of the worker process")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    leased = models.PositiveIntegerField(default=0)
    processed = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    rescheduled = models.PositiveIntegerField(default=0)
    tick = models.DateTimeField(null=True, blank=True, help_text="The periodic job's tick (or run request) it ran for")
    error = models.TextField(blank=True, help_text="A failed periodic run's exception and traceback")

    class Meta:
        db_table = "nexus_job_run"
        ordering = ("-started_at",)
        indexes = [
            models.Index(fields=["queue", "started_at"], name="nx_jobrun_queue_started"),
            # The admin's list, newest first (started_at, then id): without it each page sorted the whole table.
            models.Index(fields=["started_at", "id"], name="nx_jobrun_started"),
        ]
        constraints = [models.UniqueConstraint(fields=["job", "tick"], name="nx_jobrun_job_tick")]

    def __str__(self) -> str:
        return f"{self.job} {self.correlation_id}"


def index_name(table: str, suffix: str) -> str:
    """A stable index name within Django's 30-character limit."""
    return f"nx_{table[6:14]}_{hashlib.sha1(table.encode()).hexdigest()[:6]}_{suffix}"


def create_queue_model(message_class: type[QueueMessage]) -> type[QueueItem]:
    """Make the concrete model of a message class's queue, in the app that defines the class."""
    module = message_class.__module__
    app_config = apps.get_containing_app_config(module)
    if app_config is None:
        raise ConfigurationError(
            f"{message_class.__qualname__} is defined in {module}, which is not inside an installed app. "
            "Define message classes in an installed app (its queues module)."
        )
    if app_config.models_module is None:
        # Django only makes content types and permissions (post_migrate) for apps with a models module.
        app_config.models_module = sys.modules[module]
    options = message_class.queue_options
    base = message_class.queue_item_base
    table = f"nexus_{options.queue}"
    meta_attrs: dict[str, Any] = {
        "app_label": app_config.label,
        "db_table": table,
        "ordering": ("id",),
        "verbose_name": f"{options.queue} message",
        "verbose_name_plural": options.queue,
        "indexes": [
            models.Index(fields=["status", *base.lease_ordering], name=index_name(table, "status")),
            PartialIndex(
                fields=["status", "process_at"], name=index_name(table, "due"), where=Q(status=Status.SLEEPING.value)
            ),
            PartialIndex(fields=["expires_at"], name=index_name(table, "expires"), where=Q(expires_at__isnull=False)),
            # The admin's date filter and a job run's messages. Every index costs each enqueue
            # and status change, so rarer filters (updated, has error) read the table instead.
            models.Index(fields=["created_at"], name=index_name(table, "created")),
            PartialIndex(
                fields=["correlation_id"], name=index_name(table, "corrid"), where=Q(correlation_id__isnull=False)
            ),
        ],
    }
    if message_class.has_identity:
        meta_attrs["constraints"] = [models.UniqueConstraint(fields=["message_id"], name=index_name(table, "msgid"))]
    attrs = {
        "__module__": module,
        "__qualname__": f"{message_class.__qualname__}QueueItem",
        "Meta": type("Meta", (), meta_attrs),
        "message_class": message_class,
    }
    model: type[QueueItem] = type(f"{message_class.__name__}QueueItem", (base,), attrs)  # type: ignore[assignment]
    # Importable by name from the message class's module, as Django's shell and pickling expect of a model.
    defining = sys.modules.get(module)
    if defining is not None and model.__qualname__ == model.__name__ and not hasattr(defining, model.__name__):
        setattr(defining, model.__name__, model)
    return model
