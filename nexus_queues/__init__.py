"""nexus_queues: SQL tables as message queues you can see and steer from Django."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    "dispatch_due": "updates",
    "mark_processed": "updates",
    "mark_error": "updates",
    "set_processing_enabled": "updates",
    "QueueJob": "jobs",
    "queue_health": "health",
    "previous_message": "jobs",
    "PeriodicJob": "periodic_jobs",
    "periodic": "periodic_jobs",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .enqueueing import EnqueueResult, enqueue, enqueue_many
    from .health import queue_health
    from .jobs import QueueJob, previous_message
    from .leasing import abandon_expired_leases, lease
    from .messages import HealthStatus, QueueMessage, QueueMessageWithId
    from .periodic_jobs import PeriodicJob, periodic
    from .status import Status
    from .updates import default_status, dispatch_due, mark_error, mark_processed, set_default_status, update_status


__getattr__ = lazy_exports(__name__, _EXPORTS)
