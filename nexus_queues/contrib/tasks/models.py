"""The task queues' models: one queue (table ``nexus_tasks_<name>``) per task queue name in ``settings.TASKS``.

Their migrations are the project's (``MIGRATION_MODULES["nexus_tasks"]``), since the queue names are.
"""

from __future__ import annotations

from .options import declared_queues
from .queues import declare
from .running import declare_job


def _declare_all() -> None:
    for name, options in declared_queues().items():
        message_class = declare(name, keep_results_for=options.keep_results_for, database=options.database)
        declare_job(message_class, options)


_declare_all()
