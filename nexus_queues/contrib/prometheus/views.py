"""The metrics page: the API's authentication, the queues the user may view, the Prometheus text format."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from ...api.auth import AUTH
from ...api.errors import CHALLENGES
from ...permissions import may
from ...registry import registry
from .collector import QueueCollector


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The figures of the queues the user may view: 401 without credentials, 403 when the user may view none."""
    user = _authenticated_user(request)
    if user is None:
        response = HttpResponse("Unauthorized: send an API token (Authorization: Bearer ...).\n", status=401,
                                content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = CHALLENGES
        return response
    viewable = [message_class for message_class in registry if may(user, "view", message_class.queue_model)]
    if not viewable:
        return HttpResponse("Forbidden: you may view no queue.\n", status=403, content_type="text/plain; charset=utf-8")
    scrape = CollectorRegistry(auto_describe=False)
    scrape.register(QueueCollector(viewable, timezone.now()))
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(scrape), content_type=content_type)


def _authenticated_user(request: HttpRequest) -> Any:
    """The user of the request's API token, Basic credentials or session, as the API finds it; None without."""
    return next((user for auth in AUTH if (user := auth(request)) is not None), None)
