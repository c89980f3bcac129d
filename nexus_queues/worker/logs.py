"""Log records of a job run carry its correlation id as ``nexus.correlation_id``.

Imports nothing of Django's apps: ``LOGGING`` loads this module before the apps are ready.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Sequence

correlation_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("nexus_correlation_id", default=None)
"""The correlation id of the job run this code is part of (None outside a run)."""

FIELD = "nexus.correlation_id"
QUIET = ("pika",)
"""Libraries whose INFO records (pika: several per connection) the commands' own logging shows only at ``-v 2``."""
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
    """Log to stderr when nothing else is configured (pika's records from WARNING up, below ``-v 2``), and stamp
    every handler's records with the id."""
    root = logging.getLogger()
    if not root.handlers:
        handler: logging.Handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
        root.setLevel({0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG))
        if verbosity < 2:
            for name in QUIET:
                logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger(name).level))
    loggers = [root, *(v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger))]
    for handler in {h for lg in loggers for h in lg.handlers}:
        if not any(isinstance(f, CorrelationIdFilter) for f in handler.filters):
            handler.addFilter(CorrelationIdFilter())


def what_runs(queues: Sequence[str], periodic: Sequence[str], *, dispatch: bool, concurrency: int, burst: bool) -> str:
    """What a worker runs, for its start line: ``queues a, b; periodic jobs x; dispatch loop; 2 threads``."""
    parts = [
        f"queues {', '.join(queues)}" if queues else "no queue jobs",
        f"periodic jobs {', '.join(periodic)}" if periodic else "no periodic jobs",
        "dispatch loop" if dispatch else "no dispatch loop",
        f"{concurrency} thread{'s' if concurrency > 1 else ''}",
    ]
    return "; ".join(parts) + (", until drained (burst)" if burst else "")
