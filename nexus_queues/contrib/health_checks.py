"""django-health-check integration (``pip install nexus-queues[health]``): one check per queue.

``QueueHealthCheckView`` is django-health-check's view plus a :class:`QueueCheck` for every queue
with ``health_check=True``, found at request time, so new queues need no wiring.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from django.db import connections
from django.http import HttpResponse
from health_check.base import HealthCheck
from health_check.exceptions import ServiceUnavailable, ServiceWarning
from health_check.views import HealthCheckView

from ..conf import settings
from ..connections import DATABASE_ERRORS
from ..health import queue_health
from ..registry import registry
from ..status import HealthStatus


@dataclasses.dataclass
class QueueCheck(HealthCheck):
    """A queue's health: Unavailable when unhealthy, Warning when degraded."""

    queue: str

    def __repr__(self) -> str:
        """The name the health page shows: ``Queue greetings``."""
        return f"Queue {self.queue}"

    def run(self) -> None:
        """Raise what the queue's policy says; return when healthy."""
        message_class = registry.get(self.queue)
        connection = connections[message_class.queue_options.database]
        opened_here = connection.connection is None
        try:
            health = queue_health(message_class)
        except DATABASE_ERRORS as exc:
            raise ServiceUnavailable(f"Cannot read the queue table ({type(exc).__name__}).") from exc
        finally:
            # Checks run in executor threads: close what this thread opened, as health_check's Database check does.
            if opened_here:
                connection.close()
        if health.status == HealthStatus.UNHEALTHY:
            raise ServiceUnavailable(health.summary)
        if health.status == HealthStatus.DEGRADED:
            raise ServiceWarning(health.summary)


def queue_checks() -> list[QueueCheck]:
    """A check for every registered queue whose ``health_check`` option is on."""
    return [QueueCheck(queue=cls.queue_name()) for cls in registry if cls.queue_options.health_check]


class QueueHealthCheckView(HealthCheckView):
    """django-health-check's page with the view's ``checks`` followed by one check per queue."""

    warnings_as_errors: bool | None = None
    """Does a warning alone (a degraded queue) make the page answer 500? None: ``HEALTH_WARNINGS_AS_ERRORS``."""

    async def get(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponse:
        """django-health-check's answer; 200 rather than 500 when every failure is a warning and warnings pass."""
        response: HttpResponse = await super().get(request, *args, **kwargs)
        if response.status_code == 500 and not self._warnings_fail() and self._only_warnings():
            response.status_code = 200
        return response

    def get_template_names(self) -> list[str]:
        """django-health-check's page; ours when ``health_check`` is not in ``INSTALLED_APPS``."""
        return [*super().get_template_names(), "nexus_queues/health.html"]

    def _warnings_fail(self) -> bool:
        return settings.HEALTH_WARNINGS_AS_ERRORS if self.warnings_as_errors is None else self.warnings_as_errors

    def _only_warnings(self) -> bool:
        return all(isinstance(result.error, ServiceWarning) for result in self.results if result.error is not None)

    def get_checks(self) -> Iterator[HealthCheck]:
        """The configured checks, then the queues'."""
        yield from super().get_checks()
        yield from queue_checks()
