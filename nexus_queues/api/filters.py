"""Filters on message properties, as the API takes them, turned into Django JSON lookups.

``{"product.sku": "123", "quantity__gte": 5}`` selects messages whose ``product.sku`` equals
``"123"`` and whose ``quantity`` is at least 5. Operators: eq (the default), lt, lte, gt, gte, isnull.
"""

from __future__ import annotations

import re
from typing import Any

from django.db.models import JSONField
from django.db.models.fields.json import KeyTransform

OPERATORS = {"eq": "exact", "lt": "lt", "lte": "lte", "gt": "gt", "gte": "gte", "isnull": "isnull"}
_PROPERTY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$|^[0-9]+$")
_LOOKUP_NAMES = frozenset(KeyTransform.get_lookups()) | frozenset(JSONField.get_lookups())  # type: ignore[call-arg]


class BadFilter(ValueError):
    """A filter key or value the API cannot turn into a lookup; the message names it."""


def message_lookups(filters: dict[str, Any]) -> dict[str, Any]:
    """Django lookups on the ``message`` column for the API's property filters."""
    if not isinstance(filters, dict):
        raise BadFilter("The filter must be a JSON object of property paths to values.")
    return dict(_lookup(key, value) for key, value in filters.items())


def _lookup(key: str, value: Any) -> tuple[str, Any]:
    path, _, operator = key.partition("__")
    operator = operator or "eq"
    if operator not in OPERATORS:
        raise BadFilter(f"Filter {key!r}: unknown operator {operator!r}; use one of {', '.join(OPERATORS)}.")
    parts = path.split(".")
    for part in parts:
        if not _PROPERTY.match(part) or "__" in part:
            raise BadFilter(f"Filter {key!r}: {part!r} is not a property name (letters, digits, single '_').")
        if part in _LOOKUP_NAMES:
            raise BadFilter(f"Filter {key!r}: property {part!r} is named like a Django lookup; not filterable.")
    if isinstance(value, dict | list):
        raise BadFilter(f"Filter {key!r}: compare with a string, number, boolean or null, not {type(value).__name__}.")
    if operator == "isnull" and not isinstance(value, bool):
        raise BadFilter(f"Filter {key!r}: isnull takes true or false.")
    return "__".join(["message", *parts, OPERATORS[operator]]), value
