"""A failure as text every engine stores: what error_type, error_message and error_traceback hold, and logs show."""

from __future__ import annotations

import traceback
from typing import NamedTuple

MAX_TYPE_LENGTH = 255
"""The length of ``QueueItem.error_type`` (a CharField)."""

MAX_MESSAGE_LENGTH = 10_000
"""Characters of an exception's message kept in ``error_message``."""

MAX_TRACEBACK_LENGTH = 100_000
"""Characters of a traceback kept in ``error_traceback``; with the message, a row stays far below MariaDB's
packet size (16 MiB by default), so one huge failure cannot fail a whole batch's acknowledgement."""


class ErrorDetails(NamedTuple):
    """An exception as its row stores it."""

    type: str
    message: str
    traceback: str


def describe(exc: BaseException) -> ErrorDetails:
    """``exc``'s dotted type, message and traceback, storable on every engine; never raises."""
    kind = type(exc)
    return ErrorDetails(
        storable(f"{kind.__module__}.{kind.__qualname__}", MAX_TYPE_LENGTH),
        message_of(exc),
        storable(_traceback_of(exc), MAX_TRACEBACK_LENGTH),
    )


def message_of(exc: BaseException) -> str:
    """``str(exc)`` made storable, or what went wrong when ``str()`` raises."""
    try:
        text = str(exc)
    except Exception as failure:
        text = f"<str() of {type(exc).__name__} raised {type(failure).__name__}>"
    return storable(text, MAX_MESSAGE_LENGTH)


def storable(text: str, limit: int) -> str:
    """``text`` with NUL (PostgreSQL refuses it) and lone surrogates (not UTF-8) escaped, cut to ``limit``
    characters keeping its start and its end."""
    text = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit:
        return text
    mark = f"\n[... {len(text)} characters, cut to {limit} ...]\n"
    kept = limit - len(mark)
    return text[: kept - kept // 2] + mark + text[len(text) - kept // 2 :]


def _traceback_of(exc: BaseException) -> str:
    try:
        return "".join(traceback.format_exception(exc))
    except Exception as failure:  # the traceback module is careful, but a failure's own record must not fail
        return f"<the traceback of {type(exc).__name__} could not be formatted: {type(failure).__name__}>"
