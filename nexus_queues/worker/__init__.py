"""The processes that act on queues: the worker loop, its job runs and the delayed-dispatch loop.

Importing this package loads no models, so that ``logs.CorrelationIdFilter`` works in ``LOGGING``.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """``from nexus_queues.worker import Worker``, loaded on first use (it needs the app registry)."""
    if name == "Worker":
        from .loop import Worker

        return Worker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
