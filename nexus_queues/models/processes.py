"""The live workers' rows: one per ``nexus_worker``, ``nexus_dispatch`` or ``nexus_rabbitmq_consume`` process, and one
per queue whose job it runs (see :mod:`nexus_queues.processes`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from django.db import models
from django.db.models import Max, Q

from ..conf import settings


class ProcessKind(StrEnum):
    """What the process is."""

    WORKER = "worker"
    DISPATCH = "dispatch"
    CONSUMER = "consumer"
    """``nexus_rabbitmq_consume``: stores into its queue, runs no job."""


HEALTHY = "healthy"
"""A process's own health when it reports no trouble (the values are those of
HealthStatus, in nexus_queues.status)."""


class ProcessState(StrEnum):
    """What an operator sees: running, stopped gracefully, or silent for longer than ``WORKER_GONE_AFTER``."""

    LIVE = "live"
    STOPPED = "stopped"
    GONE = "gone"


NEVER = timedelta.max
"""How long there has been no live process when none was ever seen (or its row was cleaned)."""


class WorkerProcessQuerySet(models.QuerySet):
    """Process rows, by what they serve and their state at a given time."""

    def serving(self, queue: str) -> WorkerProcessQuerySet:
        """Processes that run the job of ``queue``."""
        return self.filter(queues__queue=queue, kind=ProcessKind.WORKER)

    def consuming(self, queue: str) -> WorkerProcessQuerySet:
        """Consumers that store into ``queue``."""
        return self.filter(queues__queue=queue, kind=ProcessKind.CONSUMER)

    def troubled(self) -> WorkerProcessQuerySet:
        """Processes whose last heartbeat reported them degraded or unhealthy."""
        return self.exclude(health=HEALTHY)

    def dispatching(self) -> WorkerProcessQuerySet:
        """Processes that run a dispatch loop (``nexus_dispatch`` and ``nexus_worker --with-dispatch``)."""
        return self.filter(dispatches=True)

    def live(self, now: datetime) -> WorkerProcessQuerySet:
        """Processes running at ``now``: not stopped, and heard from within ``WORKER_GONE_AFTER``."""
        return self.filter(stopped_at__isnull=True, last_seen_at__gte=now - settings.WORKER_GONE_AFTER)

    def forgettable(self, now: datetime) -> WorkerProcessQuerySet:
        """Stopped or gone processes last heard from longer than ``WORKER_PROCESS_RETENTION`` before ``now``."""
        return self.filter(last_seen_at__lt=now - settings.WORKER_PROCESS_RETENTION)

    def absent_for(self, now: datetime) -> timedelta | None:
        """How long no process of these has been live at ``now``: None when one is, :data:`NEVER` when none was
        seen. One aggregate query."""
        found = self.aggregate(
            seen=Max("last_seen_at"), running=Max("last_seen_at", filter=Q(stopped_at__isnull=True))
        )
        if found["running"] is not None and found["running"] >= now - settings.WORKER_GONE_AFTER:
            return None
        return NEVER if found["seen"] is None else max(timedelta(0), now - found["seen"])


class WorkerProcess(models.Model):
    """A worker, dispatch or consumer process as its heartbeat last reported it."""

    kind = models.CharField(max_length=10, choices=[(k.value, k.value) for k in ProcessKind])
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    concurrency = models.PositiveIntegerField(default=1)
    dispatches = models.BooleanField(default=False, help_text="Runs a dispatch loop (Sleeping messages due -> Pending)")
    burst = models.BooleanField(default=False, help_text="Exits once the queues are drained")
    version = models.CharField(max_length=40, help_text="The nexus_queues version it runs")
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField(help_text="Its last heartbeat (its stop, once stopped)")
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="When it stopped gracefully")
    doing = models.CharField(max_length=20, help_text="At its last heartbeat: running, sleeping, idle, stopping…")
    runs = models.JSONField(default=list, blank=True, help_text="The runs in hand at its last heartbeat: "
                                                                "[{queue, correlation_id}]")
    held = models.PositiveIntegerField(default=0, help_text="A consumer's invalid bodies held unacknowledged, at its "
                                                            "last heartbeat")
    health = models.CharField(max_length=10, default=HEALTHY, choices=[(h, h) for h in (HEALTHY, "degraded",
                              "unhealthy")], help_text="Its own health at its last heartbeat")
    health_reason = models.TextField(blank=True, default="", help_text="Why it is not healthy")

    objects = WorkerProcessQuerySet.as_manager()

    class Meta:
        db_table = "nexus_worker_process"
        verbose_name = "worker process"
        verbose_name_plural = "worker processes"
        ordering = ("-started_at",)
        indexes = [
            models.Index(fields=["last_seen_at"], name="nx_process_last_seen"),
            models.Index(fields=["dispatches", "last_seen_at"], name="nx_process_dispatches"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.host}:{self.pid}"

    def state(self, now: datetime) -> ProcessState:
        """Live, stopped or gone at ``now``."""
        if self.stopped_at is not None:
            return ProcessState.STOPPED
        if self.last_seen_at < now - settings.WORKER_GONE_AFTER:
            return ProcessState.GONE
        return ProcessState.LIVE


class WorkerProcessQueue(models.Model):
    """A queue whose job a worker process runs."""

    process = models.ForeignKey(WorkerProcess, on_delete=models.CASCADE, related_name="queues")
    queue = models.CharField(max_length=40)

    class Meta:
        db_table = "nexus_worker_process_queue"
        constraints = [models.UniqueConstraint(fields=["queue", "process"], name="nx_process_queue")]

    def __str__(self) -> str:
        return self.queue
