"""Schedules across real ``nexus_worker`` processes: a tick runs once among workers, a killed run stays unfinished,
start requests reach a sleeping worker, a switched-off job stays off, a run request waits for a worker. The
decisions themselves are tested in process, in test_periodic.py and test_loop.py."""

import signal
import time

import pytest

from nexus_queues import Status, enqueue
from nexus_queues.jobs.control import outcome, run_now, set_job_enabled
from nexus_queues.models import JobRun, PeriodicJobSettings
from tests.commands import reports, stop_workers, wait_until
from tests.testapp.jobs import DigestJob, Heartbeat
from tests.testapp.queues import Digest, Greeting

pytestmark = pytest.mark.django_db(transaction=True)

PEEK = 0.2
"""The peek delay of the workers that must be seen to read their settings again."""
TICKING = ("nexus_worker", "--queue", "greetings", "--periodic", "--concurrency", "1")
"""A worker of the periodic jobs (``--periodic``: named queues alone run none), one run at a time (a run held by the
gate holds the worker)."""
SCHEDULED = ("nexus_worker", "--queue", "digests", "--queue", "greetings", "--no-periodic")
"""A worker on the scheduled digests and, as its sign of life, the continuous greetings (after them in each sweep)."""


def said(files, word: str) -> list[list[str]]:
    return [words for words in reports(files) if words[0] == word]


def heartbeats() -> list[JobRun]:
    return list(JobRun.objects.filter(job=Heartbeat.name()).order_by("tick"))


def round_trip(files, worker, n: int) -> None:
    """A greeting enqueued now is processed: the worker swept the digests once more, as it does before greetings."""
    enqueue(Greeting(name="mark", times=n))
    wait_until(lambda: ["mark", str(n)] in [words[:2] for words in said(files, "mark")], f"greeting {n}", worker)


def settle(files, worker, n: int) -> None:
    """Return once the worker has swept its jobs with settings read after this call: it reads them again at least once
    per peek delay, so a sweep begun two peek delays later has, and the greeting it leases marks one."""
    time.sleep(2 * PEEK)
    round_trip(files, worker, n)


def test_schedules__two_workers_run_each_tick_once(manage, files):
    """Two workers offered every tick: each tick has one run, run by one of them; both took part."""
    workers = [manage(*TICKING, NEXUS_TEST_TICK="1") for _ in range(2)]
    # The gate holds the first run's worker, so the next tick must go to the other one.
    wait_until(lambda: len(said(files, "heartbeat-started")) >= 2, "both workers in a heartbeat", workers[0])
    files["gate"].touch()
    wait_until(lambda: sum(run.finished_at is not None for run in heartbeats()) >= 6, "six heartbeats", workers[0])
    for worker in workers:
        stop_workers(worker)
    runs = heartbeats()
    assert len({run.tick for run in runs}) == len(runs) == len(said(files, "heartbeat-started"))
    assert sorted(words[2] for words in said(files, "heartbeat")) == sorted(run.correlation_id for run in runs)
    assert {outcome(run) for run in runs} == {"succeeded"}
    pids = {str(worker.proc.pid) for worker in workers}
    assert {run.worker.rsplit(":", 1)[1] for run in runs} == pids
    assert {words[1] for words in said(files, "heartbeat-started")[:2]} == pids


def test_schedules__a_run_killed_stays_unfinished_and_the_next_tick_runs(manage, files):
    """SIGKILL in a periodic run leaves its tick's run unfinished, never run again; a new worker runs a later tick."""
    worker = manage(*TICKING, NEXUS_TEST_TICK="1")
    wait_until(lambda: said(files, "heartbeat-started"), "a heartbeat to start", worker)
    worker.proc.send_signal(signal.SIGKILL)
    worker.finish()
    [killed] = heartbeats()
    assert outcome(killed) == "unfinished"
    files["gate"].touch()
    worker = manage(*TICKING, NEXUS_TEST_TICK="1")
    wait_until(lambda: any(run.finished_at for run in heartbeats()), "a later heartbeat", worker)
    stop_workers(worker)
    first, *later = heartbeats()
    assert (first.correlation_id, outcome(first)) == (killed.correlation_id, "unfinished")
    assert later and all(run.tick > killed.tick and outcome(run) == "succeeded" for run in later)
    assert len(said(files, "heartbeat-started")) == 1 + len(later) == 1 + len(said(files, "heartbeat"))


def test_schedules__start_processing_wakes_a_sleeping_scheduled_job(manage, files):
    """A worker idle for a 600 s peek delay, on a job due never, drains the queue as soon as start_processing asks;
    a message enqueued without it stays Pending (seen by a worker that reads its settings every 0.2 s)."""
    worker = manage(*SCHEDULED, "--peek-delay", "600")
    round_trip(files, worker, 1)  # the never-run queue's first drain, at start, is over
    enqueue(Digest(text="asked"), start_processing=True)
    wait_until(lambda: said(files, "digest"), "the requested drain", worker)
    stop_workers(worker)
    worker = manage(*SCHEDULED, "--peek-delay", str(PEEK))
    round_trip(files, worker, 2)  # listening, so that it hears the next enqueue's wake-up
    enqueue(Digest(text="quiet"))
    settle(files, worker, 3)
    stop_workers(worker)
    assert [words[1] for words in said(files, "digest")] == ["asked"]
    assert list(Digest.queue_items().values_list("status", flat=True)) == [Status.PENDING]


def test_schedules__start_processing_does_not_start_a_switched_off_job(manage, files):
    """start_processing on a switched-off job stores no request: the message stays Pending, also once switched on,
    until a request made while it is on."""
    worker = manage(*SCHEDULED, "--peek-delay", str(PEEK))
    round_trip(files, worker, 1)
    set_job_enabled(DigestJob, False)
    enqueue(Digest(text="held"), start_processing=True)
    settle(files, worker, 2)
    assert not said(files, "digest")
    set_job_enabled(DigestJob, True)
    settle(files, worker, 3)
    assert not said(files, "digest")
    assert list(Digest.queue_items().values_list("status", flat=True)) == [Status.PENDING]
    enqueue(Digest(text="asked"), start_processing=True)
    wait_until(lambda: len(said(files, "digest")) == 2, "both digests drained", worker)
    stop_workers(worker)


def test_schedules__a_run_requested_while_no_worker_ran_runs_once(manage, files):
    """run_now with no worker running: the first worker to start runs the job once, for the request."""
    run_now(Heartbeat)
    requested_at = PeriodicJobSettings.objects.get(job=Heartbeat.name()).run_requested_at
    files["gate"].touch()
    worker = manage(*TICKING, "--peek-delay", str(PEEK))
    wait_until(lambda: any(run.finished_at for run in heartbeats()), "the requested heartbeat", worker)
    settle(files, worker, 1)
    stop_workers(worker)
    [run] = heartbeats()
    assert (run.tick, outcome(run), len(said(files, "heartbeat"))) == (requested_at, "succeeded", 1)
