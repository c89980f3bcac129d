"""Deprecated: the tasks framework's backend moved to :mod:`nexus_queues.contrib.tasks`.

``"nexus_queues.tasks"`` in ``INSTALLED_APPS``, ``"nexus_queues.tasks.NexusBackend"`` in ``TASKS`` and imports of
``nexus_queues.tasks.<module>`` keep working for this release, each with a DeprecationWarning.
"""

from __future__ import annotations

from typing import Any

from ..deprecations import moved_package

__getattr__: Any = moved_package(__name__, "nexus_queues.contrib.tasks")
