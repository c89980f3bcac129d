"""The live workers: one row per ``nexus_worker``, ``nexus_dispatch`` or ``nexus_rabbitmq_consume`` process, kept up
to date by its heartbeat.

A process registers in the database of each queue it serves (as job runs are kept there), with one
:class:`WorkerProcessQueue` row per queue whose job it runs, so that "is a worker serving queue X" is one indexed
look-up on every engine. A consumer registers the queue it stores into, with its own health at each beat (the
invalid bodies it holds, and why). Whether a process is live, stopped or gone is read from its times, never stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

# The models and their vocabulary live in models/processes.py; importable from here, where they were.
from .models.processes import HEALTHY as HEALTHY
from .models.processes import NEVER as NEVER
from .models.processes import ProcessKind as ProcessKind
from .models.processes import ProcessState as ProcessState
from .models.processes import WorkerProcess as WorkerProcess
from .models.processes import WorkerProcessQuerySet as WorkerProcessQuerySet
from .models.processes import WorkerProcessQueue as WorkerProcessQueue


@dataclass(frozen=True)
class Condition:
    """What a process says of its own health at each heartbeat: a consumer's invalid bodies held, and why."""

    health: str = HEALTHY
    reason: str = ""
    held: int = 0


def untroubled() -> Condition:
    """The condition of a process with nothing to report."""
    return Condition()


@dataclass(frozen=True)
class LiveProcess:
    """A live process as its rows in the queues' databases show it: the newest row and every queue it serves."""

    process: WorkerProcess
    queues: frozenset[str]


def live_processes(databases: Iterable[str], now: datetime) -> list[LiveProcess]:
    """The processes live at ``now`` in any of ``databases``, each once (a process registers in every database it
    serves), the newest first; two queries per database, each on the live rows only."""
    found: dict[tuple[str, str, int, datetime], LiveProcess] = {}
    for alias in dict.fromkeys(databases):
        for process in WorkerProcess.objects.using(alias).live(now).prefetch_related("queues"):
            key = (process.kind, process.host, process.pid, process.started_at)
            queues = frozenset(q.queue for q in process.queues.all())
            seen = found.get(key)
            if seen is not None:
                process, queues = max(seen.process, process, key=lambda p: p.last_seen_at), seen.queues | queues
            found[key] = LiveProcess(process, queues)
    return sorted(found.values(), key=lambda live: live.process.started_at, reverse=True)
