"""Model instances built without Django's cost per field: raw rows, as a queryset would build them, and new rows."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.fields import NOT_PROVIDED
from django.db.models.signals import post_init, pre_init

if TYPE_CHECKING:
    from ..models import QueueItem

_CONVERTERS: dict[tuple[str, type[Any]], list[tuple[int, Any, list[Any]]]] = {}
_DEFAULTS: dict[type[Model], dict[str, Any] | None] = {}
M = TypeVar("M", bound=Model)


def new(model: type[M], **values: Any) -> M:
    """``model(**values)``, its other fields at their defaults, with its attributes set at once where nothing hooks
    ``__init__`` and no default is computed per instance: a worker makes a run's row on each wake-up, and
    ``__init__`` walks every field (about 15 µs in a loop, several times that after a sleep)."""
    defaults = _defaults(model)
    if defaults is None or not _plainly_built(model) or values.keys() - defaults.keys():
        return model(**values)  # which also says what is wrong with an unknown name
    instance = model.__new__(model)
    instance._state = ModelState()
    instance.__dict__.update(defaults)
    instance.__dict__.update(values)
    return instance


def _defaults(model: type[Model]) -> dict[str, Any] | None:
    """Each concrete field's default by attribute name; None when a default is made per instance (a callable)."""
    if model not in _DEFAULTS:
        fields = model._meta.concrete_fields
        per_instance = any(
            (f.has_default() and callable(f.default)) or f.db_default is not NOT_PROVIDED for f in fields
        )
        _DEFAULTS[model] = None if per_instance else {field.attname: field.get_default() for field in fields}
    return _DEFAULTS[model]


def items(connection: BaseDatabaseWrapper, model: type[QueueItem], rows: Sequence[Sequence[Any]]) -> list[QueueItem]:
    """Model instances, in FIFO order, of rows holding every column in the model's field order.

    Built with the fields' and the backend's converters, without a queryset's cost per statement,
    which is most of a single-message lease's time in Python.
    """
    converters = _converters(connection, model)
    names = [f.attname for f in model._meta.concrete_fields]
    build = partial(_built, model) if _plainly_built(model) else model.from_db
    found = []
    for row in rows:
        values = list(row)
        for i, column, column_converters in converters:
            for convert in column_converters:
                values[i] = convert(values[i], column, connection)
        found.append(build(connection.alias, names, values))
    return sorted(found, key=lambda item: item.pk)


def _plainly_built(model: type[Model]) -> bool:
    """Would ``from_db`` and ``__init__`` do no more than set the attributes? (No init signal receivers, no own
    ``__init__`` or ``from_db``.) :func:`items` and :func:`new` build instances themselves only then."""
    return (
        model.__init__ is Model.__init__
        and model.from_db.__func__ is Model.from_db.__func__  # type: ignore[attr-defined]
        and not pre_init.has_listeners(model)
        and not post_init.has_listeners(model)
    )


def _built(model: type[QueueItem], alias: str, names: list[str], values: list[Any]) -> QueueItem:
    """What ``model.from_db`` builds, its attributes set at once rather than one by one through ``__init__``."""
    item = model.__new__(model)
    state = item._state = ModelState()
    state.adding, state.db = False, alias
    item.__dict__.update(zip(names, values, strict=True))
    return item


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
