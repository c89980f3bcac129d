"""URLs of nexus_queues: ``path("nexus/", include("nexus_queues.urls"))``.

The HTTP API and its OpenAPI description (``openapi.json``, ``docs``); when django-health-check
is installed, a health page with one check per queue (``health/``); when prometheus-client is installed, the
queues' metrics for Prometheus (``metrics/``). An API path asked with a trailing slash redirects (308, keeping
the method and body) to the path without it, as ``metrics`` redirects to ``metrics/``.
"""

from importlib.util import find_spec

from django.http import Http404, HttpRequest, HttpResponsePermanentRedirect
from django.urls import Resolver404, URLPattern, URLResolver, path, re_path, resolve

from .exports import require_extra

require_extra("api", "ninja", "nexus_queues.urls serves the HTTP API")

from .api import api  # noqa: E402  (after the check, which names the extra rather than a failed import)

urlpatterns: list[URLPattern | URLResolver] = [path("", api.urls)]

if find_spec("health_check") is not None:
    from .contrib.health_checks import QueueHealthCheckView

    urlpatterns.append(path("health/", QueueHealthCheckView.as_view(checks=()), name="nexus_queues_health"))

if find_spec("prometheus_client") is not None:
    from .contrib.prometheus.views import metrics

    urlpatterns.append(path("metrics/", metrics, name="nexus_queues_metrics"))


def without_slash(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Redirect ``queues/`` to ``queues`` when that is one of ours; a 404 otherwise."""
    target = request.path[:-1]
    try:
        found = resolve(target)
    except Resolver404 as exc:
        raise Http404(request.path) from exc
    if found.func is without_slash:
        raise Http404(request.path)
    query = request.META.get("QUERY_STRING", "")
    return HttpResponsePermanentRedirect(f"{target}?{query}" if query else target, preserve_request=True)


urlpatterns.append(re_path(r"^.+/$", without_slash))
