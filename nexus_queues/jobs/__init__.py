"""Jobs: the code that processes queues (queue jobs) or runs on a schedule (periodic jobs), their schedules and
timetables, and the control operators steer them with. The data layer never imports this package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exports import lazy_exports

# Public name -> submodule, imported on first use: a jobs module may be imported while apps load. No name is a
# submodule's: importing the submodule would replace it on the package.
_EXPORTS = {
    "QueueJob": "queue_jobs",
    "JobRegistry": "queue_jobs",
    "Outcome": "queue_jobs",
    "jobs": "queue_jobs",
    "previous_message": "queue_jobs",
    "PeriodicJob": "periodic_jobs",
    "periodic": "periodic_jobs",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .periodic_jobs import PeriodicJob, periodic
    from .queue_jobs import JobRegistry, Outcome, QueueJob, jobs, previous_message

__getattr__ = lazy_exports(__name__, _EXPORTS)
