"""A nexus backend's ``OPTIONS``, and the task queues that ``settings.TASKS`` declares."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connections
from django.utils.module_loading import import_string

from ...exceptions import ConfigurationError
from .backend import NexusBackend

DEFAULT_QUEUE_NAME = "default"


@dataclass(frozen=True)
class BackendOptions:
    """The ``OPTIONS`` of a ``NexusBackend`` entry of ``settings.TASKS``, with their defaults."""

    batch_size: int = 1
    """Tasks one worker run leases at once: more drains short tasks faster, one keeps long ones from waiting."""
    max_attempts: int = 1
    """Runs of a failing task before it stays FAILED (1, the framework's behaviour: no retry)."""
    backoff: timedelta = timedelta(seconds=30)
    """Wait before a failed task's first retry, doubled for each later one."""
    keep_results_for: timedelta | None = timedelta(days=7)
    """How long a SUCCESSFUL task's row (its result) stays; None keeps it forever. FAILED ones stay until deleted."""
    database: str = "default"
    """The database alias of the task queues' tables."""


_NAMES = {f.name for f in fields(BackendOptions)}


def backend_options(alias: str, options: dict[str, Any]) -> BackendOptions:
    """The validated ``OPTIONS`` of backend ``alias``; :class:`ConfigurationError` names what is wrong."""
    unknown = set(options) - _NAMES
    if unknown:
        raise ConfigurationError(f"TASKS[{alias!r}]['OPTIONS']: unknown option(s) {', '.join(sorted(unknown))}.")
    found = BackendOptions(**options)
    for name in ("batch_size", "max_attempts"):
        value = getattr(found, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(f"TASKS[{alias!r}]['OPTIONS']['{name}'] must be a positive integer.")
    if not isinstance(found.backoff, timedelta) or found.backoff <= timedelta(0):
        raise ConfigurationError(f"TASKS[{alias!r}]['OPTIONS']['backoff'] must be a positive timedelta.")
    keep = found.keep_results_for
    if keep is not None and (not isinstance(keep, timedelta) or keep < timedelta(0)):
        raise ConfigurationError(f"TASKS[{alias!r}]['OPTIONS']['keep_results_for'] must be a timedelta or None.")
    if found.database not in connections.settings:
        raise ConfigurationError(f"TASKS[{alias!r}]['OPTIONS']['database'] {found.database!r} is not in DATABASES.")
    return found


def nexus_backends() -> dict[str, dict[str, Any]]:
    """The entries of ``settings.TASKS`` whose backend is ours (or a subclass), by alias."""
    found = {}
    for alias, params in (getattr(settings, "TASKS", None) or {}).items():
        backend = params.get("BACKEND")
        if isinstance(backend, str):
            try:
                backend_class = import_string(backend)
            except ImportError:
                continue  # the framework's own check reports it
            if isinstance(backend_class, type) and issubclass(backend_class, NexusBackend):
                found[alias] = params
    return found


def declared_queues() -> dict[str, BackendOptions]:
    """Each task queue name of the nexus backends, with the options of the first backend that names it."""
    queues: dict[str, BackendOptions] = {}
    for alias, params in nexus_backends().items():
        options = backend_options(alias, params.get("OPTIONS", {}))
        for name in params.get("QUEUES", [DEFAULT_QUEUE_NAME]):
            queues.setdefault(name, options)
    return queues
