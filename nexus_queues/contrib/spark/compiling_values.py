"""A message class's values compiled into Spark SQL, walking pydantic's core schema beside the DataFrame's Spark type:
for each value, its canonical JSON text and the errors pydantic (or canonical JSON) would find in it.

Only what :mod:`.compiling` documents is compiled; anything else raises :class:`NotCompilable` naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from copy import copy
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ...limits import MAX_INTEGER, MAX_JSON_DEPTH, MIN_INTEGER
from ...message_fields import in_utc
from . import compiling_sql as sql
from .compiling_patterns import java_pattern

INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
UTC_ZONES = frozenset({"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00"})
"""Session time zones in which Spark hands Python a timestamp whose offset is zero (pydantic writes it ``Z``)."""
_PASSED_KEYS = {"type", "metadata", "ref"}
_KEYS: dict[str, set[str]] = {
    "str": {"min_length", "max_length", "pattern"},
    "int": {"ge", "gt", "le", "lt"},
    "bool": set(),
    "decimal": {"max_digits", "decimal_places", "ge", "gt", "le", "lt", "allow_inf_nan"},
    "date": set(),
    "datetime": {"tz_constraint", "microseconds_precision"},
    "enum": {"cls", "members", "sub_type"},
    "literal": {"expected"},
    "list": {"items_schema", "min_length", "max_length"},
    "nullable": {"schema"},
    "default": {"schema", "default", "default_factory", "default_factory_takes_data"},
    "definitions": {"schema", "definitions"},
    "definition-ref": {"schema_ref"},
    "function-after": {"function", "schema"},
    "model": {"cls", "schema", "custom_init", "root_model", "config", "post_init"},
}
_BOUNDS = {
    "ge": (">=", "greater than or equal to"),
    "gt": (">", "greater than"),
    "le": ("<=", "less than or equal to"),
    "lt": ("<", "less than"),
}
_DEFAULT_FACTORIES = (list, dict, set, frozenset, tuple)


class NotCompilable(Exception):
    """The message class, or the DataFrame's columns for it, take the Python path (the reason names the field)."""


@dataclass(frozen=True)
class Path:
    """Where a value is: as pydantic's error names it (its input keys) and as canonical JSON's does (its class,
    then its output keys); list indices as SQL text, the rest as literal keys."""

    loc: tuple[str | Index, ...] = ()
    dump: tuple[str | Index, ...] = ()

    def key(self, loc: str, dump: str) -> Path:
        return Path((*self.loc, loc), (*self.dump, dump))

    def index(self, variable: str) -> Path:
        return Path((*self.loc, Index(variable)), (*self.dump, Index(variable)))

    @property
    def name(self) -> str:
        """The field as a reason names it (list indices as ``[]``)."""
        return ".".join("[]" if isinstance(part, Index) else part for part in self.loc) or "(message)"


@dataclass(frozen=True)
class Index:
    variable: str


def dotted(parts: tuple[str | Index, ...]) -> str:
    """SQL text of a path, its parts joined by dots."""
    pieces: list[str] = []
    text = ""
    for position, part in enumerate(parts):
        text += "." if position else ""
        if isinstance(part, Index):
            pieces += [sql.literal(text)] if text else []
            pieces.append(f"CAST({part.variable} AS STRING)")
            text = ""
        else:
            text += part
    pieces += [sql.literal(text)] if text or not pieces else []
    return sql.concat(*pieces)


@dataclass(frozen=True)
class Compiled:
    """A value's JSON text (SQL; what a valid row holds) and its errors (SQL arrays of error structs, NULLs in them
    meaning none)."""

    json: str
    errors: list[str] = field(default_factory=list)


@dataclass
class Walk:
    """What the walk carries: the core schema's definitions, the session's time zone, the models being walked."""

    time_zone: str
    definitions: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    models: list[type] = field(default_factory=list)

    def value(self, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, *, nullable: bool = False,
              utc: bool = False) -> Compiled:  # fmt: skip
        """``value`` (SQL of ``data_type``) compiled by ``schema``."""
        kind = schema["type"]
        unknown = set(schema) - _PASSED_KEYS - _KEYS.get(kind, set())
        if kind not in _KEYS:
            why = "Java writes floats otherwise than Python" if kind == "float" else "the JVM path does not write it"
            raise NotCompilable(f"field {at.name}: a {kind} field ({why}).")
        if unknown:
            raise NotCompilable(f"field {at.name}: a {kind} with {', '.join(sorted(unknown))} (the JVM path lacks it).")
        if kind == "definitions":
            self.definitions.update({d["ref"]: d for d in schema["definitions"]})
            return self.value(schema["schema"], value, data_type, at, nullable=nullable, utc=utc)
        if kind == "definition-ref":
            return self.value(self.definitions[schema["schema_ref"]], value, data_type, at, nullable=nullable, utc=utc)
        if kind == "default":
            return self.value(schema["schema"], value, data_type, at, nullable=nullable, utc=utc)
        if kind == "nullable":
            return self.value(schema["schema"], value, data_type, at, nullable=True, utc=utc)
        if kind == "function-after":
            if schema["function"].get("function") is not in_utc:
                raise NotCompilable(f"field {at.name}: a validator of its own.")
            return self.value(schema["schema"], value, data_type, at, nullable=nullable, utc=True)
        if kind == "model":
            if not isinstance(data_type, StructType):
                raise NotCompilable(f"field {at.name}: a nested model from a {data_type.simpleString()} column.")
            return self.model(schema, value, data_type, at, nullable)
        if kind == "list":
            return self.list(schema, value, data_type, at, nullable)
        return self.scalar(kind, schema, value, data_type, at, nullable, utc)

    def scalar(self, kind: str, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path,
               nullable: bool, utc: bool) -> Compiled:  # fmt: skip
        json, checks, invalid = _SCALARS[kind](self, schema, value, data_type, at, utc)
        first = [] if nullable else [(f"{value} IS NULL", sql.literal(invalid))]
        if kind == "str":
            reason = sql.concat(dotted(at.dump), sql.literal(": holds NUL (\\x00), which PostgreSQL cannot store."))
            checks = [*checks, (sql.has_nul(value), reason)]
        if nullable:
            json = f"CASE WHEN {value} IS NULL THEN 'null' ELSE {json} END"
        errors = sql.first_error(dotted(at.loc), first + checks)
        return Compiled(json, [errors] if errors else [])

    def list(self, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, nullable: bool) -> Compiled:
        if not isinstance(data_type, ArrayType):
            raise NotCompilable(f"field {at.name}: a list from a {data_type.simpleString()} column.")
        depth = len(at.loc)
        item_var, index_var = f"x{depth}", f"i{depth}"
        item = self.value(schema.get("items_schema", {"type": "any"}), item_var, data_type.elementType,
                          at.index(index_var))  # fmt: skip
        json = f"concat('[', array_join(transform({value}, {item_var} -> {item.json}), ','), ']')"
        if nullable:
            json = f"CASE WHEN {value} IS NULL THEN 'null' ELSE {json} END"
        loc = dotted(at.loc)
        branches = [] if nullable else [(f"{value} IS NULL", sql.error(loc, sql.literal("Input should be a valid list")))]
        if (most := schema.get("max_length")) is not None:
            reason = sql.concat(sql.literal(f"List should have at most {_count(most, 'item')} after validation, not "),
                                f"CAST(size({value}) AS STRING)")  # fmt: skip
            branches.append((f"size({value}) > {most}", sql.error(loc, reason)))
        items = (
            f"flatten(transform({value}, ({item_var}, {index_var}) -> {_joined(item.errors)}))" if item.errors else ""
        )
        if (least := schema.get("min_length")) is not None:
            reason = sql.concat(sql.literal(f"List should have at least {_count(least, 'item')} after validation, "
                                            "not "), f"CAST(size({value}) AS STRING)")  # fmt: skip
            short = f"array({sql.error(loc, reason)})"
            if items:
                found, none = f"e{depth}", f"v{depth}"
                valid = f"size(filter({found}, {none} -> {none} IS NOT NULL)) = 0"
                items = (f"element_at(transform(array({items}), {found} -> CASE WHEN {valid} AND size({value}) < "
                         f"{least} THEN {short} ELSE {found} END), 1)")  # fmt: skip
            else:
                branches.append((f"size({value}) < {least}", sql.error(loc, reason)))
        if not branches and not items:
            return Compiled(json)
        cases = " ".join(f"WHEN {condition} THEN array({error})" for condition, error in branches)
        if nullable:
            cases = f"WHEN {value} IS NULL THEN array({sql.NO_ERROR}) {cases}"
        rest = items or f"array({sql.NO_ERROR})"
        return Compiled(json, [f"CASE {cases} ELSE {rest} END" if cases else rest])

    def model(self, schema: Mapping[str, Any], value: str, data_type: StructType, at: Path, nullable: bool) -> Compiled:
        """A nested model from a struct column (``value`` NULL-able)."""
        model = schema["cls"]
        json, errors = self.fields(schema, data_type, lambda key: f"{value}.{sql.name(key)}", at)
        if nullable:
            json = f"CASE WHEN {value} IS NULL THEN 'null' ELSE {json} END"
            if not errors:
                return Compiled(json)
            return Compiled(json, [f"CASE WHEN {value} IS NULL THEN array({sql.NO_ERROR}) ELSE {_joined(errors)} END"])
        invalid = sql.error(dotted(at.loc), sql.literal(f"Input should be a valid dictionary or instance of "
                                                        f"{model.__name__}"))  # fmt: skip
        return Compiled(json, [f"CASE WHEN {value} IS NULL THEN array({invalid}) ELSE {_joined(errors)} END"])

    def fields(self, schema: Mapping[str, Any], columns: StructType, access: Callable[[str], str],
               at: Path) -> tuple[str, list[str]]:  # fmt: skip
        """A model's JSON object (SQL) and errors, its fields from ``columns`` (each read by ``access``)."""
        model = schema["cls"]
        if model in self.models or len(self.models) >= MAX_JSON_DEPTH:
            raise NotCompilable(f"field {at.name}: a recursive model, or one nested too deep.")
        if schema.get("custom_init") or schema.get("root_model") or schema.get("post_init"):
            raise NotCompilable(f"field {at.name}: {model.__name__} has its own __init__, model_post_init or root.")
        inner = schema["schema"]
        if inner["type"] != "model-fields" or inner.get("computed_fields") or set(inner) - {
            "type", "fields", "model_name", "computed_fields"
        }:  # fmt: skip
            raise NotCompilable(f"field {at.name}: {model.__name__} has a model validator or computed fields.")
        config = model.model_config
        extra = config.get("extra") or "ignore"
        if extra == "allow":
            raise NotCompilable(f"field {at.name}: {model.__name__} allows extra fields.")
        by_name = config.get("populate_by_name") or config.get("validate_by_name")
        self.models.append(model)
        names = {}
        for column in columns.fields:
            if column.name.lower() in names:
                raise NotCompilable(f"field {at.name}: columns {column.name!r} and {names[column.name.lower()]!r} "
                                    "differ only in case.")  # fmt: skip
            names[column.name.lower()] = column.name
        types = {column.name: column.dataType for column in columns.fields}
        members: list[tuple[str, str]] = []
        errors: list[str] = []
        used = set()
        for attribute, spec in inner["fields"].items():
            if set(spec) - {"type", "schema", "metadata", "validation_alias", "serialization_alias", "frozen"}:
                raise NotCompilable(f"field {at.key(attribute, attribute).name}: left out of the dump, or the like.")
            key = spec.get("validation_alias", attribute)
            output = spec.get("serialization_alias", attribute)
            place = at.key(key if isinstance(key, str) else attribute, output)
            if not isinstance(key, str) or (by_name and key != attribute):
                raise NotCompilable(f"field {place.name}: an alias path, or a name and an alias both taken.")
            used.add(key)
            if key in types:
                compiled = self.value(spec["schema"], access(key), types[key], place)
                members.append((output, compiled.json))
                errors += compiled.errors
            elif (default := _default(model, attribute, place)) is not None:
                members.append((output, sql.literal(default)))
            else:
                errors.append(f"array({sql.error(dotted(place.loc), sql.literal('Field required'))})")
        if extra == "forbid":
            for column in types:
                if column not in used:
                    reason = sql.literal("Extra inputs are not permitted")
                    errors.append(f"array({sql.error(dotted(at.key(column, column).loc), reason)})")
        self.models.pop()
        members.sort()
        pieces = []
        for position, (output, json) in enumerate(members):
            pieces += [sql.literal(("{" if position == 0 else ",") + sql_key(output) + ":"), json]
        pieces.append(sql.literal("}" if members else "{}"))
        return sql.concat(*_folded(pieces)), errors


def sql_key(key: str) -> str:
    """A key as canonical JSON writes it."""
    import msgspec

    return msgspec.json.encode(key).decode()


def _folded(pieces: list[str]) -> list[str]:
    """Adjacent plain literals joined into one."""
    out: list[str] = []
    for piece in pieces:
        if out and _is_plain(out[-1]) and _is_plain(piece):
            out[-1] = out[-1][:-1] + piece[1:]
        else:
            out.append(piece)
    return out


def _is_plain(piece: str) -> bool:
    return piece.startswith("'") and piece.endswith("'") and piece.count("'") == 2


def _joined(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else f"concat({', '.join(errors)})"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _default(model: type, attribute: str, at: Path) -> str | None:
    """The canonical JSON text of a field's default (a missing column's value), or None when it has none."""
    from pydantic import BaseModel, create_model

    from ...serialization import canonical_json

    info = model.model_fields[attribute]  # type: ignore[attr-defined]
    if info.is_required():
        return None
    if info.default_factory is not None and info.default_factory not in _DEFAULT_FACTORIES:
        raise NotCompilable(f"field {at.name}: a default_factory of its own (the JVM path writes one value).")
    probe = create_model("Default", __base__=BaseModel, value=(info.annotation, copy(info)))
    import json

    (found,) = json.loads(canonical_json(probe())).values()
    return sql_key(found) if isinstance(found, str) else _canonical(found)


def _canonical(value: Any) -> str:
    import msgspec

    return msgspec.json.encode(value, order="sorted").decode()


# Scalars: (schema, value, type, path, utc) -> (JSON SQL, [(failing condition, reason SQL)], reason when NULL)
Scalar = tuple[str, list[tuple[str, str]], str]


def _needs(data_type: DataType, kinds: tuple[type, ...], what: str, at: Path) -> None:
    if not isinstance(data_type, kinds):
        raise NotCompilable(f"field {at.name}: {what} from a {data_type.simpleString()} column.")


def _bounds(schema: Mapping[str, Any], value: str, literal: Callable[[Any], str]) -> list[tuple[str, str]]:
    checks = []
    for key, (operator, words) in _BOUNDS.items():
        if key in schema:
            bound = schema[key]
            checks.append((f"NOT ({value} {operator} {literal(bound)})",
                           sql.literal(f"Input should be {words} {bound}")))  # fmt: skip
    return checks


def _str(walk: Walk, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool) -> Scalar:
    _needs(data_type, (StringType,), "text", at)
    checks = []
    if (least := schema.get("min_length")) is not None:
        checks.append((f"length({value}) < {least}",
                       sql.literal(f"String should have at least {_count(least, 'character')}")))  # fmt: skip
    if (most := schema.get("max_length")) is not None:
        checks.append((f"length({value}) > {most}",
                       sql.literal(f"String should have at most {_count(most, 'character')}")))  # fmt: skip
    if (pattern := schema.get("pattern")) is not None:
        java = java_pattern(pattern) if isinstance(pattern, str) else None
        if java is None:
            raise NotCompilable(f"field {at.name}: pattern {pattern!r} may not mean in Java what it means in Rust.")
        checks.append((f"NOT ({value} RLIKE {sql.literal(java)})",
                       sql.literal(f"String should match pattern '{pattern}'")))  # fmt: skip
    return sql.json_string(value), checks, "Input should be a valid string"


def _long(bound: Any) -> str:
    if isinstance(bound, bool) or not isinstance(bound, int) or not MIN_INTEGER <= bound <= MAX_INTEGER:
        raise ValueError(bound)
    return f"CAST('{bound}' AS BIGINT)"


def _int(walk: Walk, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool) -> Scalar:
    _needs(data_type, INTEGRAL, "an int", at)
    try:
        checks = _bounds(schema, value, _long)
    except ValueError as exc:
        raise NotCompilable(f"field {at.name}: a bound {exc} outside the signed 64-bit range.") from exc
    return f"CAST({value} AS STRING)", checks, "Input should be a valid integer"


def _bool(walk: Walk, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool) -> Scalar:
    _needs(data_type, (BooleanType,), "a bool", at)
    return f"CASE WHEN {value} THEN 'true' ELSE 'false' END", [], "Input should be a valid boolean"


def _decimal(walk: Walk, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool) -> Scalar:
    _needs(data_type, (DecimalType, *INTEGRAL), "a Decimal", at)
    if not isinstance(data_type, DecimalType):
        value, data_type = f"CAST({value} AS DECIMAL(20, 0))", DecimalType(20, 0)
    precision, scale = data_type.precision, data_type.scale
    checks = []
    digits, places = schema.get("max_digits"), schema.get("decimal_places")
    whole_most = digits - places if digits is not None and places is not None else None
    if (digits is not None and precision > digits) or (places is not None and scale > places) or (
        whole_most is not None and precision - scale > whole_most
    ):
        all_digits, after = sql.decimal_digits(value)
        if digits is not None:
            checks.append((f"{all_digits} > {digits}", sql.literal(
                f"Decimal input should have no more than {_count(digits, 'digit')} in total")))  # fmt: skip
        if places is not None:
            checks.append((f"{after} > {places}", sql.literal(
                f"Decimal input should have no more than {_count(places, 'decimal place')}")))  # fmt: skip
        if whole_most is not None:
            checks.append((f"{all_digits} - {after} > {whole_most}", sql.literal(
                f"Decimal input should have no more than {_count(whole_most, 'digit')} before the decimal point")))
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
            checks.append((f"NOT (CAST({value} AS {typed}) {operator} CAST('{bound}' AS {typed}))",
                           sql.literal(f"Input should be {words} {schema[key]}")))  # fmt: skip
    json = sql.canonical_decimal(value, scale)
    return json, checks, "Decimal input should be an integer, float, string or Decimal object"


def _date(walk: Walk, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool) -> Scalar:
    _needs(data_type, (DateType,), "a date", at)
    days = f"unix_date({value})"
    checks = [(f"{days} NOT BETWEEN {sql.FIRST_DAY} AND {sql.LAST_DAY}",
               sql.literal("Input should be a valid date (years 1 to 9999)"))]  # fmt: skip
    return f"concat('\"', CAST({value} AS STRING), '\"')", checks, "Input should be a valid date"


def _datetime(walk: Walk, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool) -> Scalar:
    if isinstance(data_type, TimestampNTZType):
        raise NotCompilable(f"field {at.name}: a datetime from a timestamp_ntz column (no time zone).")
    _needs(data_type, (TimestampType,), "a datetime", at)
    if schema.get("tz_constraint") not in (None, "aware"):
        raise NotCompilable(f"field {at.name}: a naive datetime from a timestamp column.")
    if not utc and walk.time_zone not in UTC_ZONES:
        raise NotCompilable(f"field {at.name}: a datetime Python would write in the session's time zone "
                            f"{walk.time_zone} (set spark.sql.session.timeZone to UTC, or type it UtcDatetime).")
    micros = f"unix_micros({value})"
    checks = [(f"{micros} NOT BETWEEN {sql.FIRST_MICROS}L AND {sql.LAST_MICROS}L",
               sql.literal("Input should be a valid datetime (years 1 to 9999)"))]  # fmt: skip
    return sql.utc_timestamp(value), checks, "Input should be a valid datetime"


def _choices(walk: Walk, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, utc: bool) -> Scalar:
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
    json = f"CASE {value} {' '.join(f'WHEN {lit} THEN {sql.json_literal(v)}' for lit, v in zip(literals, values, strict=True))} END"
    checks = [(f"NOT ({value} IN ({', '.join(literals)}))", sql.literal(f"Input should be {words}"))]
    return json, checks, f"Input should be {words}"


_SCALARS: dict[str, Callable[[Walk, Mapping[str, Any], str, DataType, Path, bool], Scalar]] = {
    "str": _str,
    "int": _int,
    "bool": _bool,
    "decimal": _decimal,
    "date": _date,
    "datetime": _datetime,
    "enum": _choices,
    "literal": _choices,
}
