"""What each setting takes: its type (the field's annotation) and its range, declared next to its default.

``manage.py check`` reads these declarations (:func:`problems`), so a value of the wrong type or out of range is
refused at start-up, naming the setting and what it expects, rather than failing later inside a worker.
"""

from __future__ import annotations

import types
from dataclasses import Field, dataclass, fields
from datetime import timedelta
from typing import Any, Union, get_args, get_origin, get_type_hints

CHECK_ID = "nexus_queues.E010"
"""The system check id of a setting of the wrong type or out of range, unless its declaration names another."""

CENTURY = timedelta(days=36525)
"""The longest time a setting takes: a longer one, added to now, could leave the years a datetime holds."""


@dataclass(frozen=True)
class Declared:
    """A setting's range (bounds inclusive, ``above`` exclusive) and the system check id that reports it."""

    above: Any = None
    at_least: Any = None
    at_most: Any = None
    check_id: str = CHECK_ID

    def refuses(self, value: Any) -> bool:
        """Is ``value`` (of the right type) outside the range?"""
        return ((self.above is not None and value <= self.above)
                or (self.at_least is not None and value < self.at_least)
                or (self.at_most is not None and value > self.at_most))

    def describe(self) -> str:
        """The range in words: " above 0 and at most 100 years"."""
        parts = [f"{word} {_show(bound)}" for word, bound in
                 (("above", self.above), ("at least", self.at_least), ("at most", self.at_most)) if bound is not None]
        return " " + " and ".join(parts) if parts else ""


def declared(*, above: Any = None, at_least: Any = None, at_most: Any = None,
             check_id: str = CHECK_ID) -> dict[str, Declared]:
    """A settings field's metadata: the range ``manage.py check`` holds its value to (its type is its annotation)."""
    return {"declared": Declared(above=above, at_least=at_least, at_most=at_most, check_id=check_id)}


def time(check_id: str = CHECK_ID) -> dict[str, Declared]:
    """The metadata of a setting holding a positive time of at most 100 years."""
    return declared(above=timedelta(0), at_most=CENTURY, check_id=check_id)


def count(check_id: str = CHECK_ID) -> dict[str, Declared]:
    """The metadata of a setting holding a whole number of at least 1."""
    return declared(at_least=1, check_id=check_id)


def problems(defaults: type, given: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(name, what it expects, check id) for each value in ``given`` that its field in ``defaults`` refuses."""
    hints = get_type_hints(defaults)
    found = []
    for spec in fields(defaults):
        if spec.name not in given:
            continue
        value, declared = given[spec.name], _declared(spec)
        if not _is(value, hints[spec.name]) or (value is not None and declared.refuses(value)):
            found.append((spec.name, _expects(hints[spec.name]) + declared.describe(), declared.check_id))
    return found


def _declared(spec: Field[Any]) -> Declared:
    return spec.metadata.get("declared", Declared())  # a field without one: its type alone is checked


def _is(value: Any, hint: Any) -> bool:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_is(value, arg) for arg in get_args(hint))
    if origin is tuple:  # a list is read as a tuple
        return isinstance(value, tuple | list) and all(_is(item, get_args(hint)[0]) for item in value)
    if origin is dict:
        key, item = get_args(hint)
        return isinstance(value, dict) and all(_is(k, key) and _is(v, item) for k, v in value.items())
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


_NAMES = {int: "a whole number (int)", bool: "True or False", str: "a string (str)", timedelta: "a timedelta",
          type(None): "None"}


def _expects(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_expects(arg) for arg in get_args(hint))
    if origin is tuple:
        return f"a list or tuple, each {_expects(get_args(hint)[0])}"
    if origin is dict:
        key, item = get_args(hint)
        return f"a dict of {_expects(key)} to {_expects(item)}"
    return _NAMES.get(hint, getattr(hint, "__name__", str(hint)))


def _show(bound: Any) -> str:
    if isinstance(bound, timedelta):
        if not bound:
            return "0"
        if bound.days and bound.days % CENTURY.days == 0 and not bound.seconds and not bound.microseconds:
            return f"{bound.days // CENTURY.days * 100} years"
        return str(bound)
    return f"{bound:,}"
