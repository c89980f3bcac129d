"""nexus_queues: SQL tables as message queues you can see and steer from Django."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import deprecations
from .exports import lazy_exports

__version__ = "0.1.0"

# Public name -> module. Imported on first use: this package is imported while Django is
# still loading apps, before models may be defined.
_EXPORTS = {
    "QueueMessage": "messages",
    "QueueMessageWithId": "messages",
    "HealthStatus": "messages",
    "Status": "status",
    "EnqueueResult": "enqueueing",
    "enqueue": "enqueueing",
    "enqueue_many": "enqueueing",
    "lease": "leasing",
    "abandon_expired_leases": "leasing",
    "update_status": "updates",
    "set_default_status": "updates",
    "default_status": "updates",
    "dispatch_due": "dispatching",
    "mark_processed": "updates",
    "mark_error": "updates",
    "set_processing_enabled": "jobs.control",
    "QueueJob": "jobs.queue_jobs",
    "queue_health": "health",
    "previous_message": "jobs.queue_jobs",
    "PeriodicJob": "jobs.periodic_jobs",
    "periodic": "jobs.periodic_jobs",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .dispatching import dispatch_due
    from .enqueueing import EnqueueResult, enqueue, enqueue_many
    from .health import queue_health
    from .jobs.control import set_processing_enabled
    from .jobs.periodic_jobs import PeriodicJob, periodic
    from .jobs.queue_jobs import QueueJob, previous_message
    from .leasing import abandon_expired_leases, lease
    from .messages import HealthStatus, QueueMessage, QueueMessageWithId
    from .status import Status
    from .updates import default_status, mark_error, mark_processed, set_default_status, update_status

deprecations.install()
__getattr__ = lazy_exports(__name__, _EXPORTS)
