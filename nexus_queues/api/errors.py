"""How the API answers bad input: JSON bodies with the right 4xx and a message naming what is wrong."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from pydantic import ValidationError as PydanticValidationError

from ..exceptions import (
    BodyTooLarge,
    InvalidArgument,
    InvalidLookup,
    InvalidMessage,
    InvalidStatus,
    MalformedJSON,
    MessageDoesNotFit,
)
from .bodies import body_limit

CHALLENGES = 'Bearer realm="nexus_queues", Basic realm="nexus_queues", charset="UTF-8"'
"""The ``WWW-Authenticate`` of every 401: the schemes the API takes (sessions have none to name)."""


def field_error(loc: list[str | int], msg: str) -> ValidationError:
    """A 422 error pointing at one field (``loc``), shaped like the API's other validation errors."""
    return ValidationError([{"type": "value_error", "loc": loc, "msg": msg}])


def pydantic_errors(exc: PydanticValidationError, prefix: list[str | int]) -> ValidationError:
    """pydantic's errors as a 422 whose locations start with ``prefix`` (``["body", 0]``)."""
    return ValidationError(
        [{"type": e["type"], "loc": [*prefix, *e["loc"]], "msg": e["msg"]} for e in exc.errors(include_url=False)]
    )


def install(api: NinjaAPI) -> None:
    """Register the handlers that turn our exceptions into JSON answers."""
    api.add_exception_handler(HttpError, partial(_http_error, api))
    api.add_exception_handler(AuthenticationError, partial(_unauthorized, api))
    api.add_exception_handler(RequestDataTooBig, partial(_too_large, api))
    api.add_exception_handler(BodyTooLarge, partial(_too_large, api))
    api.add_exception_handler(MalformedJSON, partial(_malformed, api))
    for exc_class in (InvalidArgument, InvalidMessage, InvalidStatus, InvalidLookup, MessageDoesNotFit):
        api.add_exception_handler(exc_class, partial(_unprocessable, api))


def _http_error(api: NinjaAPI, request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja wraps every body-parsing failure in a 400 without saying why: say it.
    cause = exc.__cause__
    if isinstance(cause, BodyTooLarge | RequestDataTooBig):
        return _too_large(api, request, cause)
    if isinstance(cause, MalformedJSON):
        return _malformed(api, request, cause)
    return _detail(api, request, exc.status_code, str(exc))


def _unauthorized(api: NinjaAPI, request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = _detail(api, request, exc.status_code, str(exc))
    response["WWW-Authenticate"] = CHALLENGES
    return response


def _malformed(api: NinjaAPI, request: HttpRequest, exc: MalformedJSON) -> HttpResponse:
    return _detail(api, request, 400, f"Malformed JSON body: {exc}")


def _too_large(api: NinjaAPI, request: HttpRequest, exc: Exception) -> HttpResponse:
    return _detail(api, request, 413, f"Request body too large: the limit is {body_limit()} bytes.")


def _unprocessable(api: NinjaAPI, request: HttpRequest, exc: Exception) -> HttpResponse:
    return api.create_response(request, {"detail": [{"type": "value_error", "loc": [], "msg": str(exc)}]}, status=422)


def _detail(api: NinjaAPI, request: HttpRequest, status: int, detail: Any) -> HttpResponse:
    return api.create_response(request, {"detail": detail}, status=status)
