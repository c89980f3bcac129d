"""A backend for Django's tasks framework (``django.tasks``, or the ``django_tasks`` backport) on nexus queues."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...exports import lazy_exports

_EXPORTS = {"NexusBackend": "backend"}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .backend import NexusBackend

__getattr__ = lazy_exports(__name__, _EXPORTS)
