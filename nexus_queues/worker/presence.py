"""A process's row among the live workers: registered at start, beaten every ``WORKER_HEARTBEAT_INTERVAL`` with what
the process is doing (and its own health, if it reports one), marked stopped at a graceful stop. A failing write is
logged and tried again at the next beat."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.db import reset_queries, transaction
from django.utils import timezone

from .. import __version__
from ..conf import settings
from ..connections import reset_connections
from ..failures import message_of
from ..processes import Condition, ProcessKind, WorkerProcess, WorkerProcessQueue, untroubled
from ..registry import registry

logger = logging.getLogger("nexus_queues.presence")

STOP_TIMEOUT = 10.0
"""Seconds a stopping process waits for its last write; a database that hangs does not hold up the exit."""


def no_runs() -> list[dict[str, str]]:
    """What a process without job runs has in hand."""
    return []


def queues_by_alias(queues: Iterable[str], dispatches: bool) -> dict[str, list[str]]:
    """The databases a process registers in, each with the queues (of ``queues``) it keeps: a dispatch loop serves
    every queue, so it registers wherever a queue is."""
    by_alias: dict[str, list[str]] = {}
    for message_class in registry:
        alias = message_class.queue_options.database
        if message_class.queue_name() in queues:
            by_alias.setdefault(alias, []).append(message_class.queue_name())
        elif dispatches:
            by_alias.setdefault(alias, [])
    return by_alias or {"default": []}


class Presence(threading.Thread):
    """Keeps this process's :class:`~nexus_queues.processes.WorkerProcess` rows (one per database it serves)."""

    def __init__(
        self, *, kind: ProcessKind, queues: Iterable[str] = (), dispatches: bool = False, concurrency: int = 1,
        burst: bool = False, activity: Callable[[], str], runs: Callable[[], list[dict[str, str]]] = no_runs,
        condition: Callable[[], Condition] = untroubled,
    ) -> None:
        super().__init__(name="nexus-presence", daemon=True)
        self._activity = activity
        """What the process is doing when it has no run in hand: working, sleeping, stopping."""
        self._aliases = queues_by_alias(set(queues), dispatches)
        self._fields: dict[str, Any] = {
            "kind": kind, "host": socket.gethostname()[:255], "pid": os.getpid(), "concurrency": concurrency,
            "dispatches": dispatches, "burst": burst, "version": __version__,
        }
        self._started_at = timezone.now()
        self._runs = runs
        self._condition = condition
        """The process's own health, read on this thread at each beat so the process's loop pays nothing for it."""
        self._rows: dict[str, int] = {}
        self._stopping = threading.Event()

    def stop(self) -> None:
        """Mark the rows stopped and end the thread (waiting at most :data:`STOP_TIMEOUT`)."""
        self._stopping.set()
        if self.is_alive():
            self.join(STOP_TIMEOUT)

    def run(self) -> None:
        try:
            while True:
                self.beat(timezone.now())
                if self._stopping.wait(settings.WORKER_HEARTBEAT_INTERVAL.total_seconds()):
                    break
            self.beat(timezone.now(), stopped=True)
        finally:
            reset_connections()

    def beat(self, now: datetime, *, stopped: bool = False) -> None:
        """Write ``now`` and what the process does into each of its rows (registering where it has none)."""
        reset_queries()
        runs = self._runs()
        condition = Condition() if stopped else self._condition()
        update = {"last_seen_at": now, "doing": "stopped" if stopped else "running" if runs else self._activity(),
                  "runs": [] if stopped else runs, "held": condition.held, "health": condition.health,
                  "health_reason": condition.reason}
        if stopped:
            update["stopped_at"] = now
        for alias, queues in self._aliases.items():
            try:
                self._write(alias, queues, update)
            except Exception as exc:  # never fatal: the process goes on, and shows as gone if this lasts
                reset_connections()
                logger.warning(
                    "Could not record this process as alive in %s (%s: %s); retrying at the next beat.", alias,
                    type(exc).__name__, message_of(exc), extra={"action": "presence"},
                )

    def _write(self, alias: str, queues: list[str], update: dict[str, Any]) -> None:
        pk = self._rows.get(alias)
        if pk is not None and WorkerProcess.objects.using(alias).filter(pk=pk).update(**update):
            return
        # First beat, or the row went (housekeeping after a long outage, or an operator): register again.
        with transaction.atomic(using=alias):
            row = WorkerProcess.objects.using(alias).create(started_at=self._started_at, **self._fields, **update)
            served = [WorkerProcessQueue(process=row, queue=queue) for queue in queues]
            WorkerProcessQueue.objects.using(alias).bulk_create(served)
        self._rows[alias] = row.pk
