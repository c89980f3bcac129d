"""Job endpoints: list jobs, switch one on or off, run one now (all through :mod:`nexus_queues.jobs.control`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status
from ninja.errors import HttpError

from ..jobs import control as job_control
from . import schemas
from .auth import job_for
from .queues import ERRORS

router = Router(tags=["jobs"])


@router.get("/jobs", response={200: list[schemas.Job], **ERRORS})
def list_jobs(request: HttpRequest) -> list[dict[str, Any]]:
    """Every job you may view: queue jobs by queue, then periodic jobs by name."""
    user = request.auth  # type: ignore[attr-defined]
    return [_job(job) for job in job_control.all_jobs() if job_control.may(user, "view", job)]


@router.get("/jobs/{name}", response={200: schemas.Job, **ERRORS})
def get_job(request: HttpRequest, name: str) -> dict[str, Any]:
    """One job: its schedule in words, whether it is on, its next and last run."""
    return _job(job_for(request, name, "view"))


@router.patch("/jobs/{name}", response={200: schemas.Job, **ERRORS})
def change_job(request: HttpRequest, name: str, change: schemas.JobChange) -> dict[str, Any]:
    """Switch the job on or off; workers honour it within a peek delay. A periodic job switched on again skips the
    ticks it missed while off."""
    job = job_for(request, name, "change")
    job_control.set_job_enabled(job, change.enabled)
    return _job(job)


@router.post("/jobs/{name}/run", response={202: schemas.Job, **ERRORS, 409: schemas.Error})
def run_job(request: HttpRequest, name: str) -> Status[dict[str, Any]]:
    """Ask the workers to run the job now, whatever its schedule: a periodic job runs once, a queue job drains its
    queue. 409 when the job is switched off."""
    job = job_for(request, name, "change")
    try:
        job_control.run_now(job)
    except job_control.JobSwitchedOff as exc:
        raise HttpError(409, str(exc)) from exc
    return Status(202, _job(job))


def _job(job: job_control.Job) -> dict[str, Any]:
    state = job_control.state_of(job)
    run = state.last_run
    last_run = None if run is None else {
        "started_at": run.started_at, "finished_at": run.finished_at, "outcome": state.last_outcome,
        "correlation_id": run.correlation_id,
    }
    return {
        "name": state.name, "kind": state.kind, "queue": state.queue or None, "category": state.category,
        "schedule": state.schedule, "enabled": state.enabled, "next_run": state.next_run, "last_run": last_run,
        "last_outcome": state.last_outcome,
    }
