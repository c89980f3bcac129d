"""The processes that act on queues: the worker loop, its job runs and the delayed-dispatch loop.

Importing this package loads no models, so that ``logs.CorrelationIdFilter`` works in ``LOGGING``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if TYPE_CHECKING:
    from .loop import Worker

__all__ = ["Worker"]

__getattr__ = lazy_exports(__name__, {"Worker": "loop"})
