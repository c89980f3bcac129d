"""Every job, queue and periodic, as operators see and steer it: schedule in words, next and last run, on/off, run
now. The admin's jobs page and the API's ``/jobs`` read and change jobs only through here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.db.models import Model, QuerySet
from django.utils import timezone

from .. import permissions
from ..backends import backend_for
from ..exceptions import InvalidSchedule, JobSwitchedOff, NotRegistered
from ..messages import QueueMessage
from ..models import JobRun, PeriodicJobSettings
from ..registry import registry
from ..start_requests import request_start
from ..updates import default_status
from .periodic_jobs import PeriodicJob, periodic_jobs
from .queue_jobs import QueueJob, jobs

Action = Literal["view", "change"]
Job = type[QueueJob] | type[PeriodicJob]


@dataclass(frozen=True)
class JobState:
    """One job as the jobs page and the API show it."""

    name: str
    """The job's dotted path."""
    kind: Literal["queue", "periodic"]
    queue: str
    """The queue it processes ("" for a periodic job)."""
    category: str
    schedule: str
    """In words: "At 03:00 every day (Europe/Stockholm)", "Every 5 minutes", or "Continuously"."""
    enabled: bool
    next_run: datetime | None
    """The next tick (None for a continuous or switched-off job)."""
    last_run: JobRun | None

    @property
    def last_outcome(self) -> str:
        """"succeeded", "partly-failed", "failed", "unfinished" (running, or its worker died), or "" before the first
        run."""
        return outcome(self.last_run) if self.last_run is not None else ""


def outcome(run: JobRun) -> str:
    """"unfinished" (running, or its worker died), "failed" (errors only), "partly-failed" (errors, and messages
    processed or rescheduled) or "succeeded"."""
    if run.finished_at is None:
        return "unfinished"
    if not run.errors:
        return "succeeded"
    return "partly-failed" if run.processed or run.rescheduled else "failed"


def all_jobs() -> list[Job]:
    """Every registered job: queue jobs by queue, then periodic jobs by name."""
    return [*jobs, *periodic_jobs]


def find_job(name: str) -> Job:
    """The job whose dotted path is ``name``; :class:`NotRegistered` when there is none."""
    for job in all_jobs():
        if job.name() == name:
            return job
    raise NotRegistered(f"No job is named {name!r}.")


def permission_model(job: Job) -> type[Model]:
    """The model whose permissions steer ``job``: its queue's, or the periodic jobs' settings' (one for them all)."""
    return job.message_class.queue_model if issubclass(job, QueueJob) else PeriodicJobSettings


def may(user: Any, action: Action, job: Job) -> bool:
    """May ``user`` ``action`` the job? Its model's permission, change implying view (:func:`permissions.may
    <nexus_queues.permissions.may>`)."""
    return permissions.may(user, action, permission_model(job))


def state_of(job: Job, now: datetime | None = None) -> JobState:
    """What the jobs page shows of ``job`` (two or three indexed reads); a bad schedule is shown, not raised."""
    now = now or timezone.now()
    try:
        schedule = job.get_schedule()
        words = schedule.describe() if schedule else "Continuously"
    except InvalidSchedule as exc:  # the system check E001 reports it too
        schedule, words = None, f"Invalid: {exc}"
    if issubclass(job, QueueJob):
        message_class = job.message_class
        enabled = message_class.queue_settings().processing_enabled()
        last = message_class.job_runs().order_by("-started_at").first()
        queue, category = message_class.queue_name(), message_class.queue_options.category
    else:
        enabled = _enabled(job)
        last = JobRun.objects.using(job.database).filter(job=job.name(), tick__isnull=False).order_by("-tick").first()
        queue, category = "", job.category
    return JobState(
        name=job.name(), kind="queue" if queue else "periodic", queue=queue, category=category, schedule=words,
        enabled=enabled, next_run=schedule.following(now) if schedule and enabled else None, last_run=last,
    )


def set_job_enabled(job: Job, enabled: bool) -> None:
    """Switch ``job`` on or off; workers honour it within a peek delay. Switched on again, a periodic job counts
    ticks from now: the ones it missed while off are not run."""
    if issubclass(job, QueueJob):
        set_processing_enabled(job.message_class, enabled)
        return
    now = timezone.now()
    changes = {"enabled": enabled, **({"ticks_since": now, "run_requested_at": None} if enabled else {})}
    if not _settings(job).exclude(enabled=enabled).update(**changes, updated_at=now):  # one UPDATE, usually
        PeriodicJobSettings.objects.using(job.database).get_or_create(
            job=job.name(), defaults={"enabled": enabled, "ticks_since": now}
        )


def set_processing_enabled(queue: type[QueueMessage] | str, enabled: bool) -> None:
    """Switch the queue's job on or off, stored in the database; workers honour it within a peek delay. Switching
    it off forgets a start request still standing, so that switching it on does not start it at once."""
    message_class = registry.resolve(queue)
    changes = {"processing_enabled": bool(enabled), **({} if enabled else {"start_requested_at": None})}
    with backend_for(message_class.queue_options.database).write_transaction():
        # A new settings row must keep the queue's current default status, not the column's "Pending".
        message_class.queue_settings().update_or_create(
            queue=message_class.queue_name(), defaults=changes,
            create_defaults={**changes, "default_status": default_status(message_class)},
        )


def run_now(job: Job) -> None:
    """Ask the workers to run ``job`` now, whatever its schedule: a periodic job runs once, a queue job drains its
    queue; :class:`JobSwitchedOff` when it is switched off."""
    if issubclass(job, QueueJob):
        if not job.message_class.queue_settings().processing_enabled():
            raise JobSwitchedOff(f"{job.name()} is switched off: switch it on to run it.")
        request_start(job.message_class)
        return
    with backend_for(job.database).write_transaction():
        if not _enabled(job):
            raise JobSwitchedOff(f"{job.name()} is switched off: switch it on to run it.")
        now = timezone.now()
        PeriodicJobSettings.objects.using(job.database).update_or_create(
            job=job.name(), defaults={"run_requested_at": now},
            create_defaults={"run_requested_at": now, "ticks_since": now},
        )


def _enabled(job: type[PeriodicJob]) -> bool:
    """Is the periodic job on? A job without a settings row is (workers create it on; an operator may delete it)."""
    found = _settings(job).first()
    return found is None or found.enabled


def _settings(job: type[PeriodicJob]) -> QuerySet[PeriodicJobSettings]:
    return PeriodicJobSettings.objects.using(job.database).filter(job=job.name())
