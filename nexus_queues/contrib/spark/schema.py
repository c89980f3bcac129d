"""A queue's rows as Spark columns: the row's own columns, then the message's fields typed from their annotations."""

from __future__ import annotations

import types
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, FutureDate, FutureDatetime, NaiveDatetime, PastDate, PastDatetime
from pydantic.fields import FieldInfo
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ...exceptions import ConfigurationError

if TYPE_CHECKING:
    from ...messages import QueueMessage

ROW_COLUMNS = (
    StructField("id", LongType(), False),
    StructField("message_id", StringType(), True),
    StructField("status", StringType(), False),
    StructField("created_at", TimestampType(), False),
    StructField("updated_at", TimestampType(), False),
    StructField("process_at", TimestampType(), True),
    StructField("attempts", IntegerType(), False),
    StructField("error_type", StringType(), False),
    StructField("error_message", StringType(), False),
)
"""The queue table's columns a read gives, in order, before the message's fields."""
ROW_PREFIX = "nexus_"
"""Put before a row column's name when a message field has that name: the message's field keeps it."""
JSON = {"nexus_queues.json": True}
"""Metadata of a string column holding JSON text (a value Spark has no type for)."""
MAX_PRECISION = 38
DEFAULT_DECIMAL = DecimalType(MAX_PRECISION, 18)
"""A Decimal without max_digits or decimal_places: Spark's own type for Python's Decimal."""
_SCALARS: dict[Any, DataType] = {
    str: StringType(),
    int: LongType(),
    float: DoubleType(),
    bool: BooleanType(),
    datetime: TimestampType(),
    date: DateType(),
    UUID: StringType(),
    **dict.fromkeys((AwareDatetime, NaiveDatetime, PastDatetime, FutureDatetime), TimestampType()),
    **dict.fromkeys((PastDate, FutureDate), DateType()),
}
_SEQUENCES = (list, set, frozenset)


def spark_schema(message_class: type[QueueMessage]) -> StructType:
    """The columns of ``message_class``'s queue: :data:`ROW_COLUMNS`, then one per message field."""
    fields = [message_field(key, field) for key, field in message_keys(message_class).items()]
    rows = [StructField(name, column.dataType, column.nullable) for name, column in row_columns(message_class).items()]
    names = [f.name for f in rows + fields]
    if len(set(names)) < len(names):
        clash = sorted({name for name in names if names.count(name) > 1})
        raise ConfigurationError(
            f"{message_class.__qualname__}: field(s) {', '.join(clash)} clash with the queue's row columns as "
            f"Spark reads them: rename the field(s) or give them another alias."
        )
    return StructType(rows + fields)


def message_keys(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by their key in its stored JSON (the alias it is dumped under, else the name)."""
    return {field.serialization_alias or field.alias or name: field for name, field in model.model_fields.items()}


def row_columns(message_class: type[QueueMessage]) -> dict[str, StructField]:
    """The row columns by the name a read gives them: their own, or prefixed where a message field has it."""
    keys = message_keys(message_class)
    return {(ROW_PREFIX + c.name if c.name in keys else c.name): c for c in ROW_COLUMNS}


def is_json(column: StructField) -> bool:
    """Does ``column`` hold JSON text (rather than text, or another type)?"""
    return bool(column.metadata.get("nexus_queues.json"))


def holds_json(data_type: DataType) -> bool:
    """Does ``data_type`` hold a column of JSON text?"""
    if isinstance(data_type, StructType):
        return any(is_json(f) or holds_json(f.dataType) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return holds_json(data_type.elementType)
    if isinstance(data_type, MapType):
        return holds_json(data_type.keyType) or holds_json(data_type.valueType)
    return False


def message_field(key: str, field: FieldInfo) -> StructField:
    """The column of a message field: nullable, as a stored message may lack it or hold what no longer fits."""
    data_type, json = _type(field.annotation, field.metadata, frozenset())
    return StructField(key, data_type, True, JSON if json else None)


def _type(annotation: Any, metadata: list[Any], seen: frozenset[type]) -> tuple[DataType, bool]:
    """Spark's type for ``annotation``, and whether it is JSON text (a string Spark cannot type otherwise)."""
    annotation, _ = _optional(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type(args[0], [*metadata, *args[1:]], seen)
    if annotation in _SCALARS:
        return _SCALARS[annotation], False
    if annotation is Decimal:
        return decimal_type(metadata), False
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _values_type([member.value for member in annotation])
    if origin is Literal:
        return _values_type(list(args))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in seen:
        return _struct(annotation, seen | {annotation}), False
    if (origin in _SEQUENCES and len(args) == 1) or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return _container(lambda element, null: ArrayType(element, null), args[0], seen)
    if origin is dict and len(args) == 2 and args[0] is str:
        return _container(lambda value, null: MapType(StringType(), value, null), args[1], seen)
    return StringType(), True


def _optional(annotation: Any) -> tuple[Any, bool]:
    """``annotation`` without None, and whether it allowed None; a union of several types stays as it is."""
    if get_origin(annotation) not in (Union, types.UnionType):
        return annotation, False
    others = [arg for arg in get_args(annotation) if arg is not type(None)]
    if len(others) == 1:
        return others[0], True
    return annotation, False


def _struct(model: type[BaseModel], seen: frozenset[type]) -> StructType:
    """A nested model's struct; its fields nullable, as a message stored before it changed may lack them."""
    fields = []
    for key, field in message_keys(model).items():
        data_type, json = _type(field.annotation, field.metadata, seen)
        fields.append(StructField(key, data_type, True, JSON if json else None))
    return StructType(fields)


def _container(make: Any, element: Any, seen: frozenset[type]) -> tuple[DataType, bool]:
    """An array or map of ``element``, its elements nullable when Optional; JSON text as a whole when they are."""
    data_type, json = _type(element, [], seen)
    if json:
        return StringType(), True
    return make(data_type, _optional(element)[1]), False


def _values_type(values: list[Any]) -> tuple[DataType, bool]:
    """The type of an Enum's or a Literal's values when they share one, else JSON text."""
    kinds = {bool if isinstance(v, bool) else int if isinstance(v, int) else type(v) for v in values}
    if len(kinds) == 1 and (kind := kinds.pop()) in (str, int, bool, float):
        return _SCALARS[kind], False
    return StringType(), True


def decimal_type(metadata: list[Any]) -> DecimalType:
    """A Decimal's type from its max_digits and decimal_places where given; else ``decimal(38, 18)``."""
    digits = _constraint(metadata, "max_digits")
    places = _constraint(metadata, "decimal_places")
    if places is not None:
        return DecimalType(min(max(digits or MAX_PRECISION, places), MAX_PRECISION), min(places, MAX_PRECISION))
    if digits is not None:
        # Without decimal_places, max_digits may fall on either side of the point.
        return DecimalType(min(2 * digits, MAX_PRECISION), min(digits, MAX_PRECISION // 2))
    return DEFAULT_DECIMAL


def _constraint(metadata: list[Any], name: str) -> int | None:
    for item in metadata:
        if isinstance(item, FieldInfo):
            found = _constraint(item.metadata, name)
        else:
            found = getattr(item, name, None)
        if found is not None:
            return int(found)
    return None
