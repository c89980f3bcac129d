"""Raw rows into model instances, as a queryset would build them but without its cost per statement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.db.backends.base.base import BaseDatabaseWrapper

if TYPE_CHECKING:
    from ..models import QueueItem

_CONVERTERS: dict[tuple[str, type[Any]], list[tuple[int, Any, list[Any]]]] = {}


def items(connection: BaseDatabaseWrapper, model: type[QueueItem], rows: Sequence[Sequence[Any]]) -> list[QueueItem]:
    """Model instances, in FIFO order, of rows holding every column in the model's field order.

    Built with the fields' and the backend's converters, without a queryset's cost per statement,
    which is most of a single-message lease's time in Python.
    """
    converters = _converters(connection, model)
    names = [f.attname for f in model._meta.concrete_fields]
    found = []
    for row in rows:
        values = list(row)
        for i, column, column_converters in converters:
            for convert in column_converters:
                values[i] = convert(values[i], column, connection)
        found.append(model.from_db(connection.alias, names, values))
    return sorted(found, key=lambda item: item.pk)


def _converters(connection: BaseDatabaseWrapper, model: type[QueueItem]) -> list[tuple[int, Any, list[Any]]]:
    """Per column position of ``model``'s rows, the converters from database values to Python ones."""
    key = (connection.alias, model)
    if key not in _CONVERTERS:
        found = []
        for i, field in enumerate(model._meta.concrete_fields):
            column = field.get_col(model._meta.db_table)
            convert = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if convert:
                found.append((i, column, convert))
        _CONVERTERS[key] = found
    return _CONVERTERS[key]
