"""nexus_queues: SQL tables as message queues you can see and steer from Django."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .exports import lazy_exports

__version__ = "0.1.0"

# Public name -> module, by audience. Imported on first use: this package is imported while Django is
# still loading apps, before models may be defined.
_DEFINING_QUEUES = {
    "QueueMessage": "messages",
    "QueueMessageWithId": "messages",
    "Status": "status",
    "HealthStatus": "status",
}
_ENQUEUEING = {
    "enqueue": "enqueueing",
    "enqueue_many": "enqueueing",
    "EnqueueResult": "enqueueing",
}
_PROCESSING = {
    "lease": "leasing",
    "mark_processed": "updates",
    "mark_error": "updates",
    "reschedule": "updates",
    "retry_later": "updates",
    "set_status": "updates",
}
_JOBS = {
    "QueueJob": "jobs",
    "previous_message": "jobs",
    "PeriodicJob": "periodic_jobs",
    "periodic": "periodic_jobs",
    "schedule_of": "schedules",
    "find_job": "job_control",
    "state_of": "job_control",
    "run_now": "job_control",
    "set_job_enabled": "job_control",
}
_OPERATING = {
    "update_status": "updates",
    "set_default_status": "updates",
    "default_status": "updates",
    "set_processing_enabled": "updates",
    "dispatch_due": "updates",
    "abandon_expired_leases": "leasing",
    "queue_health": "health",
}
_TESTING = {
    "Worker": "worker",
}
_EXPORTS = {**_DEFINING_QUEUES, **_ENQUEUEING, **_PROCESSING, **_JOBS, **_OPERATING, **_TESTING}

__all__ = [*_DEFINING_QUEUES, *_ENQUEUEING, *_PROCESSING, *_JOBS, *_OPERATING, *_TESTING]

if TYPE_CHECKING:
    from .enqueueing import EnqueueResult, enqueue, enqueue_many
    from .health import queue_health
    from .job_control import find_job, run_now, set_job_enabled, state_of
    from .jobs import QueueJob, previous_message
    from .leasing import abandon_expired_leases, lease
    from .messages import QueueMessage, QueueMessageWithId
    from .periodic_jobs import PeriodicJob, periodic
    from .schedules import schedule_of
    from .status import HealthStatus, Status
    from .updates import (
        default_status,
        dispatch_due,
        mark_error,
        mark_processed,
        reschedule,
        retry_later,
        set_default_status,
        set_processing_enabled,
        set_status,
        update_status,
    )
    from .worker import Worker


__getattr__ = lazy_exports(__name__, _EXPORTS)
