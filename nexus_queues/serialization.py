"""Canonical JSON of messages: one text for storage, hashing and idempotency checks, holding only
what every engine stores and reads back."""

from __future__ import annotations

import hashlib
import math
import re
from decimal import Decimal
from typing import Any

import msgspec
from django.core.serializers.json import DjangoJSONEncoder
from pydantic import BaseModel

from .exceptions import UnstorableValue
from .limits import MAX_JSON_DEPTH, unstorable_integer, unstorable_text

_canonical = msgspec.json.Encoder(order="sorted")
_NUL = "\\u0000"  # how the encoder writes NUL
_msgpack = msgspec.msgpack.Encoder()
_NON_FINITE_FLOAT = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_NINETEEN_DIGITS = b"0" * 19  # as many as 2**63 has: no integer outside the range is shorter
_CONTAINERS = (dict, list, tuple)
_SCALARS = frozenset({str, int, float, bool, type(None)})
MAX_PLAIN_ZEROS = 40
"""Up to how many zeros a Decimal's canonical text writes out (beyond, it keeps an exponent)."""
# A string that may be str() of a Decimal in other than its canonical form: trailing zeros, an exponent, -0.
_NOT_CANONICAL_DECIMAL = re.compile(r'"-?[0-9]+(?:\.[0-9]*0|(?:\.[0-9]+)?E[+-][0-9]+)"|"-0"')


def canonical_json(data: Any, name: str = "") -> str:
    """JSON text with sorted keys and no spaces, so equal data gives equal text.

    A Decimal is written as :func:`canonical_decimal` writes it, so that equal values give equal text at any scale.

    Raises :class:`UnstorableValue` naming the value (under ``name``, by default the message's class)
    that not every engine stores: NaN or infinity, an integer outside the signed 64-bit range
    (:data:`MIN_INTEGER` to :data:`MAX_INTEGER`), NUL, a lone surrogate, nesting deeper than
    :data:`MAX_JSON_DEPTH`.
    """
    dumped = data
    try:
        if isinstance(data, BaseModel):
            dumped = data.model_dump(mode="json", by_alias=True)
        encoded = _canonical.encode(dumped)
        text = encoded.decode()
        if _may_hold_decimals_to_rewrite(text):
            python = data.model_dump(by_alias=True) if isinstance(data, BaseModel) else data
            dumped = _with_canonical_decimals(python, dumped)
            encoded = _canonical.encode(dumped)
            text = encoded.decode()
    except (TypeError, msgspec.EncodeError) as exc:
        raise TypeError(f"not JSON-serializable: {exc}") from exc
    except (ValueError, RecursionError) as exc:  # lone surrogates, pydantic's depth limit, integers too long for str
        name = _name(name, data)
        raise _found(name, dumped, data) or UnstorableValue(name, f"cannot be made JSON: {exc}.") from exc
    found = _found(_name(name, data), dumped, data) if _suspect(text, encoded, dumped) else None
    if found:
        raise found
    return text


def canonical_decimal(value: Decimal) -> str:
    """The one text of a Decimal's value: no trailing zeros after the point, no exponent, 0 for zero of any sign.

    ``Decimal("24.90")`` and ``Decimal("2.49E+1")`` are ``"24.9"``, ``Decimal("1E+2")`` is ``"100"``. A value
    that would need more than :data:`MAX_PLAIN_ZEROS` zeros written out keeps the exponent (``"1E+100"``).
    NaN and infinities are written as ``str()`` writes them.
    """
    if not value.is_finite():
        return str(value)
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # a finite value's
    text = "".join(map(str, digits)).rstrip("0")
    if not text:
        return "0"
    exponent += len(digits) - len(text)
    if exponent > MAX_PLAIN_ZEROS or -exponent - len(text) > MAX_PLAIN_ZEROS:
        return str(Decimal((sign, tuple(map(int, text)), exponent)))
    if exponent >= 0:
        text += "0" * exponent
    else:
        text = text.rjust(1 - exponent, "0")
        text = f"{text[:exponent]}.{text[exponent:]}"
    return f"-{text}" if sign else text


def with_canonical_decimals(stored: Any, model: type[BaseModel]) -> tuple[Any, str] | None:
    """``stored`` (a message's JSON data as an older version wrote it) with its decimals written as
    :func:`canonical_decimal` writes them, and its canonical JSON text; None when they already are.

    ``stored`` is validated by ``model`` (pydantic's ``ValidationError`` when it does not fit), to tell which
    of its values are decimals, only when its text holds one that might not be canonical. Nothing else changes.
    """
    text = _canonical.encode(stored).decode()
    if not _may_hold_decimals_to_rewrite(text):
        return None
    fixed = _with_canonical_decimals(model.model_validate(stored).model_dump(by_alias=True), stored)
    fixed_text = _canonical.encode(fixed).decode()
    return None if fixed_text == text else (fixed, fixed_text)


def json_hash(text: str) -> str:
    """SHA-256 hex digest of canonical JSON text."""
    return hashlib.sha256(text.encode()).hexdigest()


class MessageEncoder(DjangoJSONEncoder):
    """Django's JSON encoder that also writes pydantic messages as their JSON data."""

    def default(self, o: Any) -> Any:
        if isinstance(o, BaseModel):
            return o.model_dump(mode="json", by_alias=True)
        return super().default(o)


def _suspect(text: str, encoded: bytes, dumped: Any) -> bool:
    """Might ``dumped`` (``encoded`` as JSON, ``text`` decoded) hold something unstorable? Cheap tests first, so
    that most messages skip the walk."""
    # The encoder writes NaN and infinities as null; pydantic dumps a key holding a lone surrogate as U+FFFD.
    return (
        _NUL in text
        or "\ufffd" in text
        or _maybe_too_long(encoded)
        or ("null" in text and _non_finite(dumped))
        or _maybe_too_deep(text)
    )


def _maybe_too_long(encoded: bytes) -> bool:
    """Might ``encoded`` hold an integer outside the signed 64-bit range? (19 digits in a row: a long fraction or
    digits in a string are a false alarm, which walks.)"""
    return _NINETEEN_DIGITS in encoded.translate(_DIGITS_AS_ZEROS)


def _non_finite(data: Any) -> bool:
    """Might ``data`` hold NaN or an infinity?"""
    # msgpack writes each float as 0xCB and 8 big-endian bytes; NaN and infinities have every exponent bit set.
    try:
        return _NON_FINITE_FLOAT.search(_msgpack.encode(data)) is not None
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):  # msgpack holds no integer beyond 64 bits
        return True


def _maybe_too_deep(text: str) -> bool:
    """Might ``text`` nest deeper than :data:`MAX_JSON_DEPTH`? (Brackets in strings count: a false alarm walks.)"""
    if len(text) <= 2 * MAX_JSON_DEPTH or text.count("{") + text.count("[") <= MAX_JSON_DEPTH:
        return False
    brackets = text.encode().translate(None, _NOT_BRACKETS)
    # A pass removes at most one level of objects and one of arrays: deeper nesting outlasts every pass.
    for _ in range(MAX_JSON_DEPTH // 2):
        brackets = brackets.replace(b"{}", b"").replace(b"[]", b"")
        if not brackets:
            return False
    return True


def _name(name: str, data: Any) -> str:
    return name or (type(data).__qualname__ if isinstance(data, BaseModel) else "value")


def _found(name: str, dumped: Any, data: Any) -> UnstorableValue | None:
    """What the dump holds that not every engine stores, or else what the message held that pydantic's dump changed."""
    return _unstorable(name, dumped) or (_unstorable(name, data) if data is not dumped else None)


def _unstorable(name: str, data: Any) -> UnstorableValue | None:
    """The first value in ``data`` that not every engine stores, as an error naming it by its path under ``name``."""
    stack: list[tuple[str, Any, int]] = [(name, data, 1)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, BaseModel):  # the message itself, not its dump
            value = value.__dict__
        if isinstance(value, _CONTAINERS):
            if depth > MAX_JSON_DEPTH:
                return UnstorableValue(path, f"objects and arrays nest deeper than {MAX_JSON_DEPTH} (MAX_JSON_DEPTH).")
            for key, item in value.items() if isinstance(value, dict) else enumerate(value):
                problem = unstorable_text(key) if isinstance(key, str) else None
                if problem:
                    return UnstorableValue(path, f"key {key!r} {problem}")
                stack.append((f"{path}.{key}", item, depth + 1))
        elif isinstance(value, str) and (problem := unstorable_text(value)):
            return UnstorableValue(path, problem)
        elif isinstance(value, float) and not math.isfinite(value):
            return UnstorableValue(path, f"{value} is not a JSON number (NaN and infinities cannot be stored).")
        elif isinstance(value, int) and (problem := unstorable_integer(value)):
            return UnstorableValue(path, problem)
    return None


def _may_hold_decimals_to_rewrite(text: str) -> bool:
    """Does ``text`` hold a string that may be a Decimal written other than canonically? (Substrings first: cheaper.)"""
    return ('0"' in text or "E+" in text or "E-" in text) and _NOT_CANONICAL_DECIMAL.search(text) is not None


def _with_canonical_decimals(python: Any, dumped: Any) -> Any:
    """``dumped`` (JSON data) with each Decimal that ``python`` (the same data as Python values) holds at the
    same place written by :func:`canonical_decimal`; a place where the two differ in shape is left as it is."""
    kind = type(python)
    if kind in _SCALARS:
        return dumped
    if kind is dict and type(dumped) is dict:
        if python.keys() >= dumped.keys():
            return {key: _with_canonical_decimals(python[key], value) for key, value in dumped.items()}
        if len(python) == len(dumped):  # keys that are not strings in Python: the two in the same order
            return {
                _with_canonical_decimals(key, dumped_key): _with_canonical_decimals(value, dumped_value)
                for (key, value), (dumped_key, dumped_value) in zip(python.items(), dumped.items(), strict=True)
            }
        return dumped
    if isinstance(python, Decimal):
        return canonical_decimal(python) if dumped is python or dumped == str(python) else dumped
    if isinstance(python, list | tuple) and isinstance(dumped, list | tuple) and len(python) == len(dumped):
        return [_with_canonical_decimals(value, item) for value, item in zip(python, dumped, strict=True)]
    if isinstance(python, set | frozenset) and isinstance(dumped, list | tuple):  # two dumps may order a set apart
        decimals = {str(value): value for value in python if isinstance(value, Decimal)}
        return [
            _with_canonical_decimals(decimals[item], item) if isinstance(item, str) and item in decimals else item
            for item in dumped
        ]
    if isinstance(python, dict) and isinstance(dumped, dict):  # a dict subclass: as a dict
        return _with_canonical_decimals(dict(python), dict(dumped))
    return dumped
