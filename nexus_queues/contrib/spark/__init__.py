"""Spark reads and writes nexus queues: the ``nexus`` data source of PySpark's Python Data Source API.

Add ``"nexus_queues.contrib.spark"`` to ``INSTALLED_APPS`` (it records each sync) and install the
``spark`` extra. Nothing here imports PySpark until it is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "session": "source",
    "register": "source",
    "NexusDataSource": "source",
    "sync": "syncing",
    "SyncCounts": "syncing",
    "SyncFailed": "syncing",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .source import NexusDataSource, register, session
    from .syncing import SyncCounts, SyncFailed, sync


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
