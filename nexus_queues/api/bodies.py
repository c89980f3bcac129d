"""Reading request bodies: the size limit first, then strict JSON."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.http import HttpRequest
from ninja.parser import Parser

from ..conf import settings
from ..exceptions import BodyTooLarge
from ..json_input import loads


def body_limit() -> int:
    """The largest body read: our setting, or Django's DATA_UPLOAD_MAX_MEMORY_SIZE when smaller."""
    django_limit = django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return min(settings.API_MAX_BODY_BYTES, django_limit) if django_limit is not None else settings.API_MAX_BODY_BYTES


def read_body(request: HttpRequest) -> bytes:
    """The body, or :class:`BodyTooLarge` before reading it when its announced length is over the limit."""
    try:
        announced = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        announced = 0
    if announced > body_limit():
        raise BodyTooLarge()
    body = request.body
    if len(body) > body_limit():
        raise BodyTooLarge()
    return body


def read_json(request: HttpRequest) -> Any:
    """The body as strict JSON data; :class:`~nexus_queues.json_input.MalformedJSON` (a 400) saying why not."""
    return loads(read_body(request))


class JsonParser(Parser):
    """ninja's JSON parser with the size limit, reading strict JSON."""

    def parse_body(self, request: HttpRequest) -> Any:
        """The body as JSON data."""
        return read_json(request)
