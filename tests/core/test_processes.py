"""The live workers' rows: a process's state at a given time, the look-ups health makes, and the in-process
presence thread that writes them (registering, beating, re-registering, signing off)."""

import logging
import os
import socket
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

import nexus_queues
from nexus_queues.processes import (
    NEVER,
    ProcessKind,
    ProcessState,
    WorkerProcess,
    WorkerProcessQueue,
    live_processes,
)
from nexus_queues.worker.presence import Presence, queues_by_alias

pytestmark = pytest.mark.django_db

GONE_AFTER = timedelta(seconds=60)


def process(*queues, seen, stopped=False, dispatches=False):
    row = WorkerProcess.objects.create(
        kind="worker", host="host", pid=1, version="0", started_at=seen - timedelta(hours=1), last_seen_at=seen,
        stopped_at=seen if stopped else None, dispatches=dispatches, doing="sleeping",
    )
    WorkerProcessQueue.objects.bulk_create(WorkerProcessQueue(process=row, queue=q) for q in queues)
    return row


def test_state__live_until_silent_for_gone_after_and_stopped_once_stopped():
    now = timezone.now()
    running, stopped = process(seen=now), process(seen=now, stopped=True)
    assert running.state(now + GONE_AFTER) == ProcessState.LIVE
    assert running.state(now + GONE_AFTER + timedelta(seconds=1)) == ProcessState.GONE
    assert stopped.state(now) == stopped.state(now + timedelta(days=1)) == ProcessState.STOPPED


def test_live__filters_the_running_and_recently_heard(settings):
    """``live(now)`` keeps processes not stopped and heard from within WORKER_GONE_AFTER (a setting)."""
    now = timezone.now()
    running = process(seen=now - timedelta(seconds=30))
    process(seen=now, stopped=True)
    process(seen=now - timedelta(minutes=5))
    assert list(WorkerProcess.objects.live(now)) == [running]
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "WORKER_GONE_AFTER": timedelta(seconds=10)}
    assert not WorkerProcess.objects.live(now).exists()


def test_absent_for__none_when_live_never_when_unseen_else_since_last_seen():
    now = timezone.now()
    rows = WorkerProcess.objects.serving("greetings")
    assert rows.absent_for(now) == NEVER
    process("greetings", seen=now - timedelta(minutes=10), stopped=True)
    process("greetings", seen=now - timedelta(minutes=7))  # gone
    process("pings", seen=now)
    assert rows.absent_for(now) == timedelta(minutes=7)
    process("greetings", "pings", seen=now - timedelta(seconds=5))
    assert rows.absent_for(now) is None
    assert WorkerProcess.objects.dispatching().absent_for(now) == NEVER
    process(seen=now, dispatches=True)
    assert WorkerProcess.objects.dispatching().absent_for(now) is None


def test_queues_by_alias__a_worker_registers_where_its_queues_are_a_dispatcher_everywhere(elsewhere):
    assert queues_by_alias({"greetings", "elsewhere"}, dispatches=False) == {
        "default": ["greetings"], "queues": ["elsewhere"]
    }
    assert queues_by_alias({"greetings"}, dispatches=False) == {"default": ["greetings"]}
    assert queues_by_alias(set(), dispatches=True) == {"default": [], "queues": []}
    assert queues_by_alias(set(), dispatches=False) == {"default": []}


def presence(**kwargs):
    return Presence(kind=ProcessKind.WORKER, activity=lambda: "sleeping", **kwargs)


def test_presence__registers_beats_and_signs_off():
    """The first beat registers this process with its queues; later beats move last_seen_at and what it does; the
    last one marks it stopped."""
    runs = [{"queue": "greetings", "correlation_id": "c1"}]
    beating = presence(queues=["greetings", "pings"], concurrency=3, runs=lambda: list(runs))
    start = timezone.now()
    beating.beat(start)
    row = WorkerProcess.objects.get()
    assert (row.kind, row.host, row.pid, row.concurrency, row.version) == (
        "worker", socket.gethostname(), os.getpid(), 3, nexus_queues.__version__
    )
    assert sorted(row.queues.values_list("queue", flat=True)) == ["greetings", "pings"]
    assert (row.last_seen_at, row.doing, row.runs, row.stopped_at) == (start, "running", runs, None)
    runs.clear()
    beating.beat(start + timedelta(seconds=10))
    row.refresh_from_db()
    assert (row.last_seen_at, row.doing, row.runs) == (start + timedelta(seconds=10), "sleeping", [])
    beating.beat(start + timedelta(seconds=12), stopped=True)
    row.refresh_from_db()
    assert (row.stopped_at, row.last_seen_at, row.doing) == (start + timedelta(seconds=12),) * 2 + ("stopped",)
    assert row.state(start + timedelta(days=1)) == ProcessState.STOPPED
    assert WorkerProcess.objects.count() == 1


def test_presence__registers_again_when_its_row_went():
    """A row deleted meanwhile (housekeeping after a long outage, an operator) is made again at the next beat."""
    beating = presence(queues=["greetings"])
    beating.beat(timezone.now())
    WorkerProcess.objects.all().delete()
    beating.beat(timezone.now())
    assert list(WorkerProcess.objects.values_list("queues__queue", flat=True)) == ["greetings"]


@pytest.mark.django_db(transaction=True)
def test_presence__a_failing_write_is_logged_never_raised(caplog):
    """With its table unreachable the beat logs a warning and returns; the next beat after it is back registers."""
    beating = presence(queues=["greetings"])
    table = WorkerProcess._meta.db_table
    with connection.schema_editor() as editor:
        editor.alter_db_table(WorkerProcess, table, "nexus_worker_process_away")
    try:
        with caplog.at_level(logging.WARNING, logger="nexus_queues.presence"):
            beating.beat(timezone.now())
    finally:
        with connection.schema_editor() as editor:
            editor.alter_db_table(WorkerProcess, "nexus_worker_process_away", table)
    assert "Could not record this process as alive in default" in caplog.text
    beating.beat(timezone.now())
    assert WorkerProcess.objects.count() == 1


@pytest.mark.django_db(databases=["default", "queues"])
def test_live_processes__each_live_process_once_with_all_its_queues():
    """A process read from two aliases of its database is listed once, with its queues; stopped and silent ones
    are left out; the newest first."""
    now = timezone.now()
    older = process("greetings", "pings", seen=now)
    newer = process(seen=now, dispatches=True)
    WorkerProcess.objects.filter(pk=newer.pk).update(pid=2, started_at=now)
    process("greetings", seen=now, stopped=True)
    process("greetings", seen=now - GONE_AFTER * 2)
    found = live_processes(["default", "queues"], now)
    assert [(live.process.pk, live.queues) for live in found] == [
        (newer.pk, frozenset()), (older.pk, frozenset({"greetings", "pings"}))
    ]
