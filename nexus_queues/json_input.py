"""JSON from outside (API requests, admin forms), read strictly: what no engine stores is refused while parsing.

Python's ``json`` module reads ``NaN`` and ``Infinity``, turns ``1e400`` into infinity, keeps lone
surrogates (``"\\ud800"``, which UTF-8 cannot encode) and raises ``RecursionError`` on deep nesting.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .exceptions import MalformedJSON

_decoder = msgspec.json.Decoder()
_BYTE = re.compile(r"\(byte (\d+)\)")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_NUL_ESCAPE = b"\\u0000"


def loads(text: str | bytes) -> Any:
    """The data of strict JSON ``text``; :class:`MalformedJSON` for NaN, Infinity, numbers beyond a double,
    lone surrogates, invalid UTF-8, nesting deeper than the parser goes, and strings holding NUL."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        data = _decoder.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # msgspec 0.23 reports bad UTF-8 as a DecodeError
        raise MalformedJSON(_not_utf8(raw) or _explain(raw, str(exc))) from exc
    except RecursionError as exc:
        raise MalformedJSON("nested too deeply to read.") from exc
    # The walk costs a pass over the data, so only text that holds the escape takes it.
    if _NUL_ESCAPE in raw and (path := _nul_path(data)) is not None:
        raise MalformedJSON(f"the text at {path} holds a NUL character (\\u0000), which PostgreSQL cannot store.")
    return data


def _not_utf8(raw: bytes) -> str | None:
    """Why ``raw`` is not UTF-8 text, naming the byte; None when it is."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text: {exc.reason} at byte {exc.start}."
    return None


def _explain(raw: bytes, reason: str) -> str:
    if "Number out of range" in reason:
        return "a number is out of range (JSON numbers here must fit a 64-bit float; 1e400 does not)."
    if _SURROGATE_ESCAPE.search(raw) and ("surrogate" in reason or "truncated" in reason):
        return f"{reason}: a lone surrogate escape (\\ud800-\\udfff) is not text UTF-8 can hold."
    found = _BYTE.search(reason)
    if found:
        at = int(found[1])
        return f"{reason}, at {raw[at : at + 20].decode('utf-8', 'replace')!r}."
    return f"{reason}."


def _nul_path(data: Any) -> str | None:
    """The JSONPath of the first key or string holding NUL, or None."""
    stack: list[tuple[str, Any]] = [("$", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str) and "\x00" in value:
            return path
        if isinstance(value, dict):
            for key, item in value.items():
                if "\x00" in key:
                    return path
                stack.append((f"{path}.{key}", item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
    return None
