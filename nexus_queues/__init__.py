"""nexus_queues: SQL tables as message queues you can see and steer from Django."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import deprecations
from .exports import lazy_exports

__version__ = "0.1.0"

# Public name -> module, by audience. Imported on first use: this package is imported while Django is
# still loading apps, before models may be defined.
_DEFINING_QUEUES = {
    "QueueMessage": "messages",
    "QueueMessageWithId": "messages",
    "Status": "status",
    "HealthStatus": "status",
    "UtcDatetime": "message_fields",
}
_ENQUEUEING = {
    "enqueue": "enqueueing",
    "enqueue_many": "enqueueing",
    "EnqueueResult": "enqueueing",
    "batch": "batches",
    "BatchResult": "batches",
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
    "QueueJob": "jobs.queue_jobs",
    "previous_message": "jobs.queue_jobs",
    "PeriodicJob": "jobs.periodic_jobs",
    "periodic": "jobs.periodic_jobs",
    "schedule_of": "jobs.schedules",
    "find_job": "jobs.control",
    "state_of": "jobs.control",
    "run_now": "jobs.control",
    "set_job_enabled": "jobs.control",
}
_OPERATING = {
    "update_status": "updates",
    "cancel": "cancelling",
    "set_default_status": "updates",
    "default_status": "updates",
    "set_processing_enabled": "jobs.control",
    "dispatch_due": "dispatching",
    "abandon_expired_leases": "leasing",
    "queue_health": "health",
}
_TESTING = {
    "Worker": "worker",
}
_EXPORTS = {**_DEFINING_QUEUES, **_ENQUEUEING, **_PROCESSING, **_JOBS, **_OPERATING, **_TESTING}

__all__ = [*_DEFINING_QUEUES, *_ENQUEUEING, *_PROCESSING, *_JOBS, *_OPERATING, *_TESTING]

if TYPE_CHECKING:
    from .batches import BatchResult, batch
    from .cancelling import cancel
    from .dispatching import dispatch_due
    from .enqueueing import EnqueueResult, enqueue, enqueue_many
    from .health import queue_health
    from .jobs.control import find_job, run_now, set_job_enabled, set_processing_enabled, state_of
    from .jobs.periodic_jobs import PeriodicJob, periodic
    from .jobs.queue_jobs import QueueJob, previous_message
    from .jobs.schedules import schedule_of
    from .leasing import abandon_expired_leases, lease
    from .message_fields import UtcDatetime
    from .messages import QueueMessage, QueueMessageWithId
    from .status import HealthStatus, Status
    from .updates import (
        default_status,
        mark_error,
        mark_processed,
        reschedule,
        retry_later,
        set_default_status,
        set_status,
        update_status,
    )
    from .worker import Worker

deprecations.install()
__getattr__ = lazy_exports(__name__, _EXPORTS)
