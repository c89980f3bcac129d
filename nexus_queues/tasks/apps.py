"""Deprecated: ``"nexus_queues.tasks"`` in ``INSTALLED_APPS`` installs :mod:`nexus_queues.contrib.tasks`."""

from __future__ import annotations

import warnings
from types import ModuleType

from nexus_queues.contrib.tasks.apps import NexusTasksConfig as _NexusTasksConfig


class NexusTasksConfig(_NexusTasksConfig):
    """The app of :mod:`nexus_queues.contrib.tasks`, installed by its old name (label ``nexus_tasks`` as before)."""

    default = True  # the one Django picks in this module, rather than the class it extends

    def __init__(self, app_name: str, app_module: ModuleType) -> None:
        warnings.warn(
            "'nexus_queues.tasks' in INSTALLED_APPS is deprecated: write 'nexus_queues.contrib.tasks' "
            "(the old name goes in the next release).",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(app_name, app_module)
