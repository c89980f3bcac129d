"""Stored values (a message's JSON data, a row's columns) as the Python values Spark takes for a column's type.

A value that does not fit its type is read as null at the nearest nullable level rather than failing
the read: a message stored before its class changed still reads, with what no longer fits left out.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ...exceptions import InvalidArgument
from ...serialization import canonical_json
from .schema import is_json

Converter = Callable[[Any], Any]
_INT_BITS: dict[type[DataType], int] = {LongType: 64, IntegerType: 32, ShortType: 16}


class _Misfit(Exception):
    """A stored value does not fit its column's type."""


def column_converter(column: StructField) -> Converter:
    """A function making a stored value into the value of ``column``: null where it does not fit, unless
    the column is not nullable (a row column given another type in ``.schema()``), which raises."""
    convert = _json if is_json(column) else converter(column.dataType)
    if column.nullable:
        return _nullable(convert)

    def required(value: Any) -> Any:
        try:
            return convert(value)
        except _Misfit:
            raise InvalidArgument(
                f"Column {column.name} is {column.dataType.simpleString()}, which {value!r} is not."
            ) from None

    return required


def converter(data_type: DataType) -> Converter:
    """A function making a stored value into a value of ``data_type``, raising ``_Misfit`` where it does not fit."""
    if isinstance(data_type, StructType):
        return _struct(data_type)
    if isinstance(data_type, ArrayType):
        return _array(data_type)
    if isinstance(data_type, MapType):
        return _map(data_type)
    if isinstance(data_type, DecimalType):
        return _decimal(data_type)
    if type(data_type) in _INT_BITS:
        return _integer(_INT_BITS[type(data_type)])
    return _SCALARS.get(type(data_type), _misfit)


def _nullable(convert: Converter) -> Converter:
    def nullable(value: Any) -> Any:
        if value is None:
            return None
        try:
            return convert(value)
        except _Misfit:
            return None

    return nullable


def _required(convert: Converter) -> Converter:
    def required(value: Any) -> Any:
        if value is None:
            raise _Misfit
        return convert(value)

    return required


def _nested(column: StructField | None, data_type: DataType, nullable: bool) -> Converter:
    if column is not None and is_json(column):
        return _nullable(_json) if nullable else _required(_json)
    return _nullable(converter(data_type)) if nullable else _required(converter(data_type))


def _struct(data_type: StructType) -> Converter:
    fields = [(f.name, _nested(f, f.dataType, f.nullable)) for f in data_type.fields]

    def struct(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, dict):
            raise _Misfit
        return tuple(convert(value.get(name)) for name, convert in fields)

    return struct


def _array(data_type: ArrayType) -> Converter:
    element = _nested(None, data_type.elementType, data_type.containsNull)

    def array(value: Any) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise _Misfit
        return [element(item) for item in value]

    return array


def _map(data_type: MapType) -> Converter:
    key = _required(converter(data_type.keyType))
    item = _nested(None, data_type.valueType, data_type.valueContainsNull)

    def map_(value: Any) -> dict[Any, Any]:
        if not isinstance(value, dict):
            raise _Misfit
        return {key(k): item(v) for k, v in value.items()}

    return map_


def _decimal(data_type: DecimalType) -> Converter:
    exponent = Decimal(1).scaleb(-data_type.scale)
    # Rounded to the scale half up, as Spark rounds (from_json, cast); more digits than the precision raise.
    context = Context(prec=data_type.precision, rounding=ROUND_HALF_UP, traps=[InvalidOperation])

    def decimal(value: Any) -> Decimal:
        if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
            raise _Misfit
        try:
            number = Decimal(value).quantize(exponent, context=context)
        except InvalidOperation as exc:
            raise _Misfit from exc
        if not number.is_finite():
            raise _Misfit
        return number

    return decimal


def _integer(bits: int) -> Converter:
    limit = 2 ** (bits - 1)

    def integer(value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not -limit <= value < limit:
            raise _Misfit
        return value

    return integer


def _double(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise _Misfit
    try:
        return float(value)
    except ValueError as exc:
        raise _Misfit from exc


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Misfit
    return value


def _timestamp(value: Any) -> datetime:
    """An aware time; a naive one is taken as UTC, as the database stores it."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise _Misfit from exc
    if not isinstance(value, datetime):
        raise _Misfit
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _date(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError as exc:
            raise _Misfit from exc
    if not isinstance(value, date):
        raise _Misfit
    return value


def _string(value: Any) -> str:
    """Text as it is; any other value as its JSON text."""
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    try:
        return canonical_json(value)
    except (TypeError, ValueError) as exc:
        raise _Misfit from exc


def _misfit(value: Any) -> Any:
    raise _Misfit


_SCALARS: dict[type[DataType], Converter] = {
    StringType: _string,
    DoubleType: _double,
    FloatType: _double,
    BooleanType: _boolean,
    TimestampType: _timestamp,
    DateType: _date,
}
