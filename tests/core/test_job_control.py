"""job_control: every job's state as operators see it, switching jobs on and off, running them now."""

from datetime import UTC, datetime, timedelta
from itertools import count

import pytest
from django.utils import timezone

from nexus_queues import set_processing_enabled
from nexus_queues.exceptions import NotRegistered
from nexus_queues.jobs.control import (
    JobSwitchedOff,
    find_job,
    outcome,
    permission_model,
    run_now,
    set_job_enabled,
    state_of,
)
from nexus_queues.models import JobRun, PeriodicJobSettings, QueueSettings
from tests.testapp.jobs import DigestJob, GreetingJob, Heartbeat
from tests.testapp.queues import Digest

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC)
_ids = count()


def _run(job: type, started_at: datetime, *, finished: bool = True, errors: int = 0, **fields: object) -> JobRun:
    """A stored run of ``job`` that started at ``started_at`` and took a second, if finished."""
    return JobRun.objects.create(
        job=job.name(), correlation_id=f"run-{next(_ids)}", worker="host:1", started_at=started_at,
        finished_at=started_at + timedelta(seconds=1) if finished else None, errors=errors, **fields,
    )


def _heartbeat_settings() -> PeriodicJobSettings:
    return PeriodicJobSettings.objects.get(job=Heartbeat.name())


@pytest.mark.parametrize(("finished", "errors", "processed", "rescheduled", "expected"), [
    (True, 0, 20, 0, "succeeded"), (True, 2, 0, 0, "failed"), (True, 5, 20, 0, "partly-failed"),
    (True, 1, 0, 3, "partly-failed"), (False, 0, 0, 0, "unfinished"),
])
def test_outcome__from_finish_and_counts(finished, errors, processed, rescheduled, expected):
    """A run without a finish is unfinished; one with errors failed, or partly failed when it also processed or
    rescheduled messages (20 processed and 5 errors is not "failed"); any other succeeded."""
    run = _run(Heartbeat, NOW, finished=finished, errors=errors, processed=processed, rescheduled=rescheduled)
    assert outcome(run) == expected


@pytest.mark.parametrize(("finished", "errors", "expected"), [(True, 0, "succeeded"), (True, 1, "failed"),
                                                              (False, 0, "unfinished")])
def test_state_of__queue_job_shows_its_latest_run(finished, errors, expected):
    """A queue job's last run is its queue's latest started run; its next run is its schedule's next tick."""
    _run(DigestJob, NOW - timedelta(hours=2), errors=1, queue="digests")
    latest = _run(DigestJob, NOW - timedelta(hours=1), finished=finished, errors=errors, queue="digests")
    _run(GreetingJob, NOW - timedelta(minutes=1), queue="greetings")
    state = state_of(DigestJob, NOW)
    assert (state.name, state.kind, state.queue, state.category) == (DigestJob.name(), "queue", "digests", "Scheduled")
    assert state.schedule == "At 04:00 on February 29 (UTC)" and state.enabled is True
    assert state.next_run == datetime(2032, 2, 29, 4, tzinfo=UTC)
    assert state.last_run == latest and state.last_outcome == expected


def test_state_of__queue_job_before_its_first_run():
    """Without runs a job has no last run and an empty outcome."""
    state = state_of(DigestJob, NOW)
    assert state.last_run is None and state.last_outcome == ""


def test_state_of__switched_off_queue_job_has_no_next_run():
    set_processing_enabled(DigestJob.message_class, False)
    state = state_of(DigestJob, NOW)
    assert state.enabled is False and state.next_run is None


def test_state_of__continuous_queue_job():
    """A job without a schedule runs continuously: no next tick."""
    state = state_of(GreetingJob, NOW)
    assert state.schedule == "Continuously" and state.next_run is None and state.enabled is True


@pytest.mark.parametrize(("errors", "expected"), [(0, "succeeded"), (3, "failed")])
def test_state_of__periodic_job_shows_its_latest_tick(errors, expected):
    """A periodic job's last run is the run of its latest tick, even when an older tick's run started later."""
    latest = _run(Heartbeat, NOW - timedelta(hours=2), errors=errors, tick=NOW - timedelta(hours=1))
    _run(Heartbeat, NOW - timedelta(minutes=30), tick=NOW - timedelta(hours=3))
    state = state_of(Heartbeat, NOW)
    assert (state.name, state.kind, state.queue, state.category) == (Heartbeat.name(), "periodic", "", "Maintenance")
    assert state.enabled is True and state.next_run == datetime(2032, 2, 29, 4, tzinfo=UTC)
    assert state.last_run == latest and state.last_outcome == expected


def test_state_of__unfinished_periodic_run():
    """A claimed tick whose run has not finished (running, or its worker died) is unfinished."""
    _run(Heartbeat, NOW - timedelta(minutes=5), finished=False, tick=NOW - timedelta(minutes=5))
    assert state_of(Heartbeat, NOW).last_outcome == "unfinished"


def test_state_of__switched_off_periodic_job_has_no_next_run():
    set_job_enabled(Heartbeat, False)
    state = state_of(Heartbeat, NOW)
    assert state.enabled is False and state.next_run is None


def test_set_job_enabled__queue_job_stores_processing():
    """A queue job is switched on and off through its queue's processing setting."""
    set_job_enabled(DigestJob, False)
    assert QueueSettings.objects.get(queue="digests").processing_enabled is False
    set_job_enabled(DigestJob, True)
    assert QueueSettings.objects.get(queue="digests").processing_enabled is True


def test_set_job_enabled__periodic_job_on_again_counts_ticks_from_now():
    """Switched on again, a periodic job counts ticks from now and forgets the run request made before."""
    run_now(Heartbeat)
    set_job_enabled(Heartbeat, False)
    off = _heartbeat_settings()
    assert off.enabled is False and off.run_requested_at is not None
    before = timezone.now()
    set_job_enabled(Heartbeat, True)
    on = _heartbeat_settings()
    assert on.enabled is True and on.run_requested_at is None
    assert off.ticks_since < before <= on.ticks_since <= timezone.now()


def test_set_job_enabled__switching_on_a_job_that_is_on_keeps_its_ticks():
    """Switching on a job that is already on changes nothing: its missed ticks and request still count."""
    run_now(Heartbeat)
    first = _heartbeat_settings()
    set_job_enabled(Heartbeat, True)
    again = _heartbeat_settings()
    assert (again.ticks_since, again.run_requested_at) == (first.ticks_since, first.run_requested_at)


def test_run_now__periodic_job_stores_a_request():
    """Run now stores the request on the job's settings row, created (counting ticks from now) when missing."""
    before = timezone.now()
    run_now(Heartbeat)
    found = _heartbeat_settings()
    assert found.enabled is True and before <= found.run_requested_at <= timezone.now()
    assert found.ticks_since == found.run_requested_at


def test_run_now__queue_job_stores_a_start_request():
    before = timezone.now()
    run_now(DigestJob)
    assert before <= QueueSettings.objects.get(queue="digests").start_requested_at <= timezone.now()


def test_run_now__refuses_a_switched_off_job():
    """A switched-off job, periodic or queue, is not run: JobSwitchedOff says to switch it on; nothing is stored."""
    for job in (Heartbeat, DigestJob):
        set_job_enabled(job, False)
        with pytest.raises(JobSwitchedOff, match="switched off: switch it on"):
            run_now(job)
    assert _heartbeat_settings().run_requested_at is None
    assert QueueSettings.objects.get(queue="digests").start_requested_at is None


def test_find_job__by_dotted_path():
    assert find_job("tests.testapp.jobs.Heartbeat") is Heartbeat
    with pytest.raises(NotRegistered):
        find_job("Heartbeat")


def test_permission_model__queue_model_or_periodic_settings():
    """A queue job needs its queue model's permission, a periodic job the periodic jobs' settings' one."""
    assert permission_model(DigestJob) is Digest.queue_model
    assert permission_model(Heartbeat) is PeriodicJobSettings


@pytest.mark.django_db
def test_state_of__shows_a_bad_schedule_instead_of_raising():
    """A job whose schedule is not one still has a state (the jobs page and the API stay up); E001 names it."""
    from nexus_queues.jobs.periodic_jobs import PeriodicJob, periodic_jobs

    class Garbled(PeriodicJob):
        schedule = "every tuesday"

    try:
        state = state_of(Garbled)
        assert state.schedule.startswith("Invalid: 'every tuesday' is not a cron expression") and state.next_run is None
    finally:
        periodic_jobs._jobs.pop(Garbled.name())
