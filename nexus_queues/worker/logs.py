"""Log records of a job run carry its correlation id as ``nexus.correlation_id``.

Imports nothing of Django's apps: ``LOGGING`` loads this module before the apps are ready.
"""

from __future__ import annotations

import contextvars
import logging

correlation_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("nexus_correlation_id", default=None)
"""The correlation id of the job run this code is part of (None outside a run)."""

FIELD = "nexus.correlation_id"
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(nexus.correlation_id)s] %(message)s"


class CorrelationIdFilter(logging.Filter):
    """Adds the current job run's correlation id (or ``-``) to every record a handler sees.

    Put it on your handlers in ``LOGGING`` (``"()": "nexus_queues.worker.logs.CorrelationIdFilter"``);
    the worker commands add it to every handler they find.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.__dict__.setdefault(FIELD, correlation_id.get() or "-")
        return True


def install(verbosity: int) -> None:
    """Log to stderr when nothing else is configured, and stamp every handler's records with the id."""
    root = logging.getLogger()
    if not root.handlers:
        handler: logging.Handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
        root.setLevel({0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG))
    loggers = [root, *(v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger))]
    for handler in {h for lg in loggers for h in lg.handlers}:
        if not any(isinstance(f, CorrelationIdFilter) for f in handler.filters):
            handler.addFilter(CorrelationIdFilter())
