"""Spark reads and writes nexus queues: ``sync`` and ``read``, in Spark's JVM with its JDBC source where the session
has the database's driver, else with the ``nexus`` data source of PySpark's Python Data Source API.

Add ``"nexus_queues.contrib.spark"`` to ``INSTALLED_APPS`` (it records each sync) and install the
``spark`` extra. Nothing here imports PySpark until it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...exports import lazy_exports

_EXPORTS = {
    "session": "source",
    "register": "source",
    "NexusDataSource": "source",
    "read": "jdbc_reading",
    "sync": "syncing",
    "SyncCounts": "counts",
    "SyncFailed": "syncing",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .counts import SyncCounts
    from .jdbc_reading import read
    from .source import NexusDataSource, register, session
    from .syncing import SyncFailed, sync


__getattr__ = lazy_exports(__name__, _EXPORTS)
