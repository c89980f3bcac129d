"""A scalar value of a message (text, int, bool, Decimal, date, datetime, a choice of values) compiled into Spark
SQL: its canonical JSON text, the checks pydantic makes of it, and what pydantic says of a NULL."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from ...exceptions import NotCompilable
from ...limits import MAX_INTEGER, MIN_INTEGER
from . import compiling_sql as sql
from .compiling_paths import Path
from .compiling_patterns import java_pattern

INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
UTC_ZONES = frozenset({"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00"})
"""Session time zones in which Spark hands Python a timestamp whose offset is zero (pydantic writes it ``Z``)."""
_BOUNDS = {
    "ge": (">=", "greater than or equal to"),
    "gt": (">", "greater than"),
    "le": ("<=", "less than or equal to"),
    "lt": ("<", "less than"),
}


Scalar = tuple[str, list[tuple[str, str]], str]
"""A scalar's value as ``to_json`` is to write it, its checks (failing SQL condition, SQL reason), and pydantic's
reason for a NULL."""


def scalar(
    kind: str, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool, time_zone: str
) -> Scalar:
    """``value`` (SQL of ``data_type``) of the core schema's ``kind``: its value as ``to_json`` is to write it, its
    checks (SQL condition that fails, SQL reason) and the reason pydantic gives for NULL."""
    return _SCALARS[kind](schema, value, data_type, at, utc, time_zone)


def count(number: int, noun: str) -> str:
    """``1 item``, ``2 items``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _needs(data_type: DataType, kinds: tuple[type, ...], what: str, at: Path) -> None:
    if not isinstance(data_type, kinds):
        raise NotCompilable(f"field {at.name}: {what} from a {data_type.simpleString()} column.")


def _bounds(schema: Mapping[str, Any], value: str, literal: Callable[[Any], str]) -> list[tuple[str, str]]:
    checks = []
    for key, (operator, words) in _BOUNDS.items():
        if key in schema:
            bound = schema[key]
            checks.append(
                (f"NOT ({value} {operator} {literal(bound)})", sql.literal(f"Input should be {words} {bound}"))
            )
    return checks


def _str(schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool, time_zone: str) -> Scalar:
    _needs(data_type, (StringType,), "text", at)
    checks = []
    if (least := schema.get("min_length")) is not None:
        checks.append(
            (f"length({value}) < {least}", sql.literal(f"String should have at least {count(least, 'character')}"))
        )
    if (most := schema.get("max_length")) is not None:
        checks.append(
            (f"length({value}) > {most}", sql.literal(f"String should have at most {count(most, 'character')}"))
        )
    if (pattern := schema.get("pattern")) is not None:
        java = java_pattern(pattern) if isinstance(pattern, str) else None
        if java is None:
            raise NotCompilable(f"field {at.name}: pattern {pattern!r} may not mean in Java what it means in Rust.")
        checks.append(
            (f"NOT ({value} RLIKE {sql.literal(java)})", sql.literal(f"String should match pattern '{pattern}'"))
        )
    return value, checks, "Input should be a valid string"


def _long(bound: Any) -> str:
    if isinstance(bound, bool) or not isinstance(bound, int) or not MIN_INTEGER <= bound <= MAX_INTEGER:
        raise ValueError(bound)
    return f"CAST('{bound}' AS BIGINT)"


def _int(schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool, time_zone: str) -> Scalar:
    _needs(data_type, INTEGRAL, "an int", at)
    try:
        checks = _bounds(schema, value, _long)
    except ValueError as exc:
        raise NotCompilable(f"field {at.name}: a bound {exc} outside the signed 64-bit range.") from exc
    return value, checks, "Input should be a valid integer"


def _bool(schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool, time_zone: str) -> Scalar:
    _needs(data_type, (BooleanType,), "a bool", at)
    return value, [], "Input should be a valid boolean"


def _decimal(schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool, time_zone: str) -> Scalar:
    _needs(data_type, (DecimalType, *INTEGRAL), "a Decimal", at)
    if not isinstance(data_type, DecimalType):
        value, data_type = f"CAST({value} AS DECIMAL(20, 0))", DecimalType(20, 0)
    precision, scale = data_type.precision, data_type.scale
    checks = []
    digits, places = schema.get("max_digits"), schema.get("decimal_places")
    whole_most = digits - places if digits is not None and places is not None else None
    if (
        (digits is not None and precision > digits)
        or (places is not None and scale > places)
        or (whole_most is not None and precision - scale > whole_most)
    ):
        all_digits, after = sql.decimal_digits(value)
        if digits is not None:
            checks.append(
                (
                    f"{all_digits} > {digits}",
                    sql.literal(f"Decimal input should have no more than {count(digits, 'digit')} in total"),
                )
            )
        if places is not None:
            checks.append(
                (
                    f"{after} > {places}",
                    sql.literal(f"Decimal input should have no more than {count(places, 'decimal place')}"),
                )
            )
        if whole_most is not None:
            checks.append(
                (
                    f"{all_digits} - {after} > {whole_most}",
                    sql.literal(
                        f"Decimal input should have no more than {count(whole_most, 'digit')} before the decimal point"
                    ),
                )
            )
    for key in _BOUNDS:
        if key in schema:
            bound = Decimal(str(schema[key]))
            _, bound_digits, exponent = bound.as_tuple()
            assert isinstance(exponent, int)
            bound_scale = max(-exponent, 0)
            bound_whole = max(len(bound_digits) + exponent, 1)
            wide_scale = max(scale, bound_scale)
            wide = max(precision - scale, bound_whole) + wide_scale
            if wide > 38:
                raise NotCompilable(f"field {at.name}: bound {bound} and the column's type need over 38 digits.")
            operator, words = _BOUNDS[key]
            typed = f"DECIMAL({wide}, {wide_scale})"
            checks.append(
                (
                    f"NOT (CAST({value} AS {typed}) {operator} CAST('{bound}' AS {typed}))",
                    sql.literal(f"Input should be {words} {schema[key]}"),
                )
            )
    json = sql.canonical_decimal(value, scale)
    return json, checks, "Decimal input should be an integer, float, string or Decimal object"


def _date(schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool, time_zone: str) -> Scalar:
    _needs(data_type, (DateType,), "a date", at)
    days = f"unix_date({value})"
    checks = [
        (
            f"{days} NOT BETWEEN {sql.FIRST_DAY} AND {sql.LAST_DAY}",
            sql.literal("Input should be a valid date (years 1 to 9999)"),
        )
    ]
    return f"CAST({value} AS STRING)", checks, "Input should be a valid date"


def _datetime(
    schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool, time_zone: str
) -> Scalar:
    if isinstance(data_type, TimestampNTZType):
        raise NotCompilable(f"field {at.name}: a datetime from a timestamp_ntz column (no time zone).")
    _needs(data_type, (TimestampType,), "a datetime", at)
    if schema.get("tz_constraint") not in (None, "aware"):
        raise NotCompilable(f"field {at.name}: a naive datetime from a timestamp column.")
    if not utc and time_zone not in UTC_ZONES:
        raise NotCompilable(
            f"field {at.name}: a datetime Python would write in the session's time zone "
            f"{time_zone} (set spark.sql.session.timeZone to UTC, or type it UtcDatetime)."
        )
    micros = f"unix_micros({value})"
    checks = [
        (
            f"{micros} NOT BETWEEN {sql.FIRST_MICROS}L AND {sql.LAST_MICROS}L",
            sql.literal("Input should be a valid datetime (years 1 to 9999)"),
        )
    ]
    return sql.utc_timestamp(value), checks, "Input should be a valid datetime"


def _choices(schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool, time_zone: str) -> Scalar:
    values = [m.value for m in schema["members"]] if schema["type"] == "enum" else list(schema["expected"])
    kinds = {bool if isinstance(v, bool) else type(v) for v in values}
    if kinds == {str}:
        _needs(data_type, (StringType,), "a choice of text", at)
    elif kinds == {int} and all(MIN_INTEGER <= v <= MAX_INTEGER for v in values):
        _needs(data_type, INTEGRAL, "a choice of ints", at)
    else:
        raise NotCompilable(f"field {at.name}: a choice of values other than all text or all ints.")
    if schema["type"] == "enum" and schema.get("sub_type") not in ("str", "int"):
        raise NotCompilable(f"field {at.name}: an Enum that is neither a str nor an int Enum.")
    literals = [sql.literal(v) if isinstance(v, str) else _long(v) for v in values]
    expected = [repr(v) for v in values]
    words = expected[0] if len(expected) == 1 else f"{', '.join(expected[:-1])} or {expected[-1]}"
    checks = [(f"NOT ({value} IN ({', '.join(literals)}))", sql.literal(f"Input should be {words}"))]
    return value, checks, f"Input should be {words}"


_SCALARS: dict[str, Callable[[Mapping[str, Any], str, DataType, Path, bool, str], Scalar]] = {
    "str": _str,
    "int": _int,
    "bool": _bool,
    "decimal": _decimal,
    "date": _date,
    "datetime": _datetime,
    "enum": _choices,
    "literal": _choices,
}
