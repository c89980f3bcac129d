"""URLs of nexus_queues: ``path("nexus/", include("nexus_queues.urls"))``.

The HTTP API and its OpenAPI description (``openapi.json``, ``docs``); when django-health-check
is installed, a health page with one check per queue (``health/``); when prometheus-client is installed, the
queues' metrics for Prometheus (``metrics/``).
"""

from importlib.util import find_spec

from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, URLResolver, path

if find_spec("ninja") is None:
    raise ImproperlyConfigured('nexus_queues.urls serves the HTTP API: pip install "nexus-queues[api]".')

from .api import api

urlpatterns: list[URLPattern | URLResolver] = [path("", api.urls)]

if find_spec("health_check") is not None:
    from .contrib.health_checks import QueueHealthCheckView

    urlpatterns.append(path("health/", QueueHealthCheckView.as_view(checks=()), name="nexus_queues_health"))

if find_spec("prometheus_client") is not None:
    from .contrib.prometheus.views import metrics

    urlpatterns.append(path("metrics/", metrics, name="nexus_queues_metrics"))
