"""Filters on message properties, as the API takes them, turned into Django JSON lookups.

``{"product.sku": "123", "quantity__gte": 5}`` selects messages whose ``product.sku`` equals
``"123"`` and whose ``quantity`` is at least 5. Operators: eq (the default), lt, lte, gt, gte, isnull.
A filter holds at most :data:`MAX_FILTER_KEYS` properties, each a path of at most :data:`MAX_FILTER_PATH` parts.
"""

from __future__ import annotations

import re
from typing import Any

from django.db.models import JSONField
from django.db.models.fields.json import KeyTransform

from ..exceptions import BadFilter

MAX_FILTER_KEYS = 100
"""Properties one filter may compare (building the query costs more than linear time in their number)."""
MAX_FILTER_PATH = 32
"""Parts of one property path (each part is a nested expression when the query is built)."""
OPERATORS = {"eq": "exact", "lt": "lt", "lte": "lte", "gt": "gt", "gte": "gte", "isnull": "isnull"}
_PROPERTY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_LOOKUP_NAMES = frozenset(KeyTransform.get_lookups()) | frozenset(JSONField.get_lookups())  # type: ignore[call-arg]


def message_lookups(filters: dict[str, Any]) -> dict[str, Any]:
    """Django lookups on the ``message`` column for the API's property filters."""
    if not isinstance(filters, dict):
        raise BadFilter("The filter must be a JSON object of property paths to values.")
    if len(filters) > MAX_FILTER_KEYS:
        raise BadFilter(f"The filter compares {len(filters)} properties; give at most {MAX_FILTER_KEYS} properties.")
    return dict(_lookup(key, value) for key, value in filters.items())


def _lookup(key: str, value: Any) -> tuple[str, Any]:
    path, _, operator = key.partition("__")
    operator = operator or "eq"
    if operator not in OPERATORS:
        raise BadFilter(f"Filter {key!r}: unknown operator {operator!r}; use one of {', '.join(OPERATORS)}.", key)
    parts = path.split(".", MAX_FILTER_PATH)
    if len(parts) > MAX_FILTER_PATH:
        raise BadFilter(f"Filter {key[:80]!r}...: a property path has at most {MAX_FILTER_PATH} parts.", key)
    for part in parts:
        if not _PROPERTY.fullmatch(part) or "__" in part:
            raise BadFilter(f"Filter {key!r}: {part!r} is not a property name (letters, digits, single '_').", key)
        if part in _LOOKUP_NAMES:
            raise BadFilter(f"Filter {key!r}: property {part!r} is named like a Django lookup; not filterable.", key)
    if isinstance(value, dict | list):
        raise BadFilter(
            f"Filter {key!r}: compare with a string, number, boolean or null, not {type(value).__name__}.", key
        )
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise BadFilter(f"Filter {key!r}: whole numbers must fit a 64-bit integer (what every engine compares).", key)
    if operator == "isnull" and not isinstance(value, bool):
        raise BadFilter(f"Filter {key!r}: isnull takes true or false.", key)
    return "__".join(["message", *parts, OPERATORS[operator]]), value
