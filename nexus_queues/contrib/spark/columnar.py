"""A DataFrame's Arrow columns written as JSON text whole columns at a time, in two key orders: the order a
message class dumps its fields (what pydantic reads and writes back) and the sorted order of canonical JSON.

A :class:`ColumnWriter` is planned from the Arrow type and the message class's pydantic core schema together,
only for pairs whose JSON input pydantic validates as it validates the Python value the per-row path gives it
(text as ``str``, integers as ``int``, decimals as ``Decimal``, UTC or naive timestamps as datetimes, dates,
lists, nested models; constraints on them included). Any other pair, a strict field, an alias, a custom validator
or serializer (but :func:`nexus_queues.message_fields.in_utc`'s) makes the plan :class:`Unsupported`: the class
stays on the per-row path. A batch whose values this writer does not write exactly as the canonical form does
(NUL, which the per-row path refuses) raises :class:`Unsupported` too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...limits import MAX_JSON_DEPTH
from ...message_fields import in_utc
from ...serialization import canonical_decimal

Texts = tuple[pa.Array, pa.Array]
"""A column as JSON texts (null written ``null``): in the class's field order, and canonical (keys sorted)."""
ColumnWriter = Callable[[pa.Array], Texts]
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""Field names written as they are (JSON needs no escape in them, and every engine sorts them alike)."""
_UTC = frozenset({"UTC", "utc", "Etc/UTC", "+00:00", "Z"})
_NEEDS_ESCAPE = r'[\\"\x00-\x1f]'
_SHORT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\x08": "\\b", "\x0c": "\\f"}
_ESCAPES = tuple(_SHORT_ESCAPES.items()) + tuple(
    (chr(code), f"\\u{code:04x}") for code in range(1, 32) if chr(code) not in _SHORT_ESCAPES
)
"""The escapes pydantic's and msgspec's JSON writers both make, a backslash first (NUL: the per-row path refuses it)."""
_SCHEMAS_PASSED = {"default", "nullable", "definitions"}
"""Core schemas that wrap another without changing a given value's validation or dump."""


class Unsupported(Exception):
    """The columns (or a batch's values) cannot be written here exactly as the per-row path writes them."""


def plan_message(arrow_schema: pa.Schema, core_schema: Mapping[str, Any], skip: frozenset[str]) -> ColumnWriter:
    """A writer of a RecordBatch's rows (as a struct array) as the message class's JSON; columns in ``skip`` left out.

    Raises :class:`Unsupported` naming why the class and these columns need the per-row path.
    """
    fields = [field for field in arrow_schema if field.name not in skip]
    return _plan(pa.struct(fields), core_schema, {}, 1)


def _plan(arrow_type: pa.DataType, schema: Mapping[str, Any], defs: dict[str, Any], depth: int) -> ColumnWriter:
    if depth > MAX_JSON_DEPTH // 2:
        raise Unsupported("nesting deeper than the per-row path's checks allow for")
    if schema.get("strict") or schema.get("config", {}).get("strict"):
        raise Unsupported("a strict field")
    if "serialization" in schema:
        raise Unsupported("a custom serializer")
    kind = schema["type"]
    if kind == "definitions":
        defs = {**defs, **{d["ref"]: d for d in schema["definitions"]}}
    if kind == "definition-ref":
        return _plan(arrow_type, defs[schema["schema_ref"]], defs, depth)
    if kind in _SCHEMAS_PASSED:
        return _plan(arrow_type, schema["schema"], defs, depth)
    if kind == "function-after" and schema["function"]["function"] is in_utc:
        return _in_utc(arrow_type, schema["schema"], defs, depth)
    if kind == "model":
        return _model(arrow_type, schema, defs, depth)
    if kind == "list":
        return _list(arrow_type, schema.get("items_schema", {"type": "any"}), defs, depth)
    if (kind, _arrow_kind(arrow_type)) in _SCALAR_PAIRS:
        return _SCALAR_PAIRS[kind, _arrow_kind(arrow_type)](arrow_type)
    if kind == "enum" and (schema.get("sub_type"), _arrow_kind(arrow_type)) in (("str", "string"), ("int", "int")):
        return _SCALAR_PAIRS[schema["sub_type"], _arrow_kind(arrow_type)](arrow_type)
    if kind == "literal":
        kinds = {type(value) for value in schema["expected"]}
        if (kinds, _arrow_kind(arrow_type)) in (({str}, "string"), ({int}, "int")):
            return _SCALAR_PAIRS["str" if kinds == {str} else "int", _arrow_kind(arrow_type)](arrow_type)
    raise Unsupported(f"a {kind} field from an Arrow {arrow_type} column")


def _in_utc(arrow_type: pa.DataType, schema: Mapping[str, Any], defs: dict[str, Any], depth: int) -> ColumnWriter:
    """A field kept in UTC by :func:`in_utc`: from a timestamp column of any time zone, written in UTC (the
    validator is given the same moment, and keeps it in UTC either way)."""
    if not (pa.types.is_timestamp(arrow_type) and arrow_type.tz):
        return _plan(arrow_type, schema, defs, depth)
    in_utc_type = pa.timestamp(arrow_type.unit, "UTC")
    write = _plan(in_utc_type, schema, defs, depth)
    return lambda array: write(pc.cast(array, in_utc_type))


def _arrow_kind(arrow_type: pa.DataType) -> str:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_decimal(arrow_type) and arrow_type.scale >= 0:
        return "decimal"
    if pa.types.is_timestamp(arrow_type) and arrow_type.unit != "ns" and (arrow_type.tz in _UTC or not arrow_type.tz):
        return "timestamp"
    if pa.types.is_date32(arrow_type):
        return "date"
    return str(arrow_type)


def _model(arrow_type: pa.DataType, schema: Mapping[str, Any], defs: dict[str, Any], depth: int) -> ColumnWriter:
    if not pa.types.is_struct(arrow_type):
        raise Unsupported(f"a nested model from an Arrow {arrow_type} column")
    if schema.get("custom_init") or schema.get("root_model") or schema.get("post_init"):
        raise Unsupported("a model with its own __init__, model_post_init or a root")
    fields_schema = schema["schema"]
    if fields_schema["type"] != "model-fields" or fields_schema.get("computed_fields"):
        raise Unsupported("a model validator or computed fields")
    names = [arrow_type.field(i).name for i in range(arrow_type.num_fields)]
    fields = fields_schema["fields"]
    if sorted(names) != sorted(fields) or len(set(names)) != len(names):
        raise Unsupported("columns other than the model's fields")
    for name, field in fields.items():
        if not KEY.fullmatch(name) or field.get("validation_alias") or field.get("serialization_alias"):
            raise Unsupported(f"field {name!r}: an alias or a name that needs escaping")
        if field.get("serialization_exclude"):
            raise Unsupported(f"field {name!r}: left out of the dump")
    children = {name: (names.index(name), _plan(arrow_type.field(name).type, f["schema"], defs, depth + 1))
                for name, f in fields.items()}  # fmt: skip
    declared = list(fields)
    ordered = sorted(fields)

    def write(array: pa.Array) -> Texts:
        parts = array.flatten() if isinstance(array, pa.StructArray) else _struct_fields(array)
        texts = {name: writer(parts[index]) for name, (index, writer) in children.items()}
        return _object(array, declared, {n: t[0] for n, t in texts.items()}), _object(
            array, ordered, {n: t[1] for n, t in texts.items()}
        )

    return write


def _struct_fields(array: pa.Array) -> list[pa.Array]:
    combined = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    return combined.flatten()


def _object(array: pa.Array, keys: list[str], texts: Mapping[str, pa.Array]) -> pa.Array:
    pieces: list[Any] = []
    for index, key in enumerate(keys):
        pieces += [("{" if index == 0 else ",") + f'"{key}":', texts[key]]
    pieces.append("}" if keys else "{}")
    joined = pc.binary_join_element_wise(*pieces, "")
    return _nulls_written(array, joined)


def _nulls_written(array: pa.Array, texts: pa.Array) -> pa.Array:
    if array.null_count:
        texts = pc.if_else(pc.is_valid(array), texts, pa.scalar("null"))
    return texts


def _list(arrow_type: pa.DataType, items: Mapping[str, Any], defs: dict[str, Any], depth: int) -> ColumnWriter:
    if not (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)):
        raise Unsupported(f"a list field from an Arrow {arrow_type} column")
    item = _plan(arrow_type.value_type, items, defs, depth + 1)

    def write(array: pa.Array) -> Texts:
        lengths = pc.fill_null(pc.list_value_length(array), 0)
        offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cast(pc.cumulative_sum(lengths), pa.int32())])
        texts = item(array.flatten())
        return tuple(  # type: ignore[return-value]
            _nulls_written(
                array,
                pc.binary_join_element_wise("[", pc.binary_join(pa.ListArray.from_arrays(offsets, t), ","), "]", ""),
            )
            for t in texts
        )

    return write


def _same(write: Callable[[pa.Array], pa.Array]) -> ColumnWriter:
    def both(array: pa.Array) -> Texts:
        text = write(array)
        return text, text

    return both


def _string(arrow_type: pa.DataType) -> ColumnWriter:
    def write(array: pa.Array) -> pa.Array:
        text = pc.cast(array, pa.string())
        if pc.any(pc.match_substring_regex(text, _NEEDS_ESCAPE)).as_py():
            if pc.any(pc.match_substring(text, "\x00")).as_py():
                raise Unsupported("NUL, which not every engine stores")
            for character, escaped in _ESCAPES:
                if pc.any(pc.match_substring(text, character)).as_py():
                    text = pc.replace_substring(text, character, escaped)
        return pc.fill_null(pc.binary_join_element_wise('"', text, '"', ""), "null")

    return _same(write)


def _integer(arrow_type: pa.DataType) -> ColumnWriter:
    return _same(lambda array: pc.fill_null(pc.cast(array, pa.string()), "null"))


def _boolean(arrow_type: pa.DataType) -> ColumnWriter:
    return _same(lambda array: pc.fill_null(pc.if_else(array, "true", "false"), "null"))


def _decimal(arrow_type: pa.DataType) -> ColumnWriter:
    """As ``str()`` of the Decimal (the value pydantic reads), and as :func:`canonical_decimal` writes it."""

    def write(array: pa.Array) -> Texts:
        text = pc.cast(array, pa.string())
        canonical = text
        if arrow_type.scale:
            canonical = pc.replace_substring_regex(canonical, r"\.?0+$", "")  # Arrow writes the point at scale > 0
        canonical = pc.replace_substring_regex(canonical, r"^-0$", "0")
        exponent = pc.fill_null(pc.match_substring(text, "E"), False)
        if pc.any(exponent).as_py():  # a value below 1E-6 at a scale above 6: written as canonical_decimal does
            written = [canonical_decimal(Decimal(value)) for value in pc.filter(text, exponent).to_pylist()]
            canonical = pc.replace_with_mask(canonical, exponent, pa.array(written, pa.string()))
        return _quoted(text), _quoted(canonical)

    return write


def _quoted(text: pa.Array) -> pa.Array:
    return pc.fill_null(pc.binary_join_element_wise('"', text, '"', ""), "null")


def _timestamp(arrow_type: pa.DataType) -> ColumnWriter:
    """As pydantic writes a datetime: microseconds when not zero, ``Z`` for UTC."""
    suffix = "Z" if arrow_type.tz else ""

    def write(array: pa.Array) -> pa.Array:
        micro = pc.cast(array, pa.timestamp("us", arrow_type.tz))
        text = pc.strftime(micro, format="%Y-%m-%dT%H:%M:%S", locale="C")
        text = pc.replace_substring_regex(text, r"\.000000$", "")
        return pc.fill_null(pc.binary_join_element_wise('"', text, suffix + '"', ""), "null")

    return _same(write)


def _date(arrow_type: pa.DataType) -> ColumnWriter:
    return _same(lambda array: _quoted(pc.strftime(array, format="%Y-%m-%d", locale="C")))


_SCALAR_PAIRS: dict[tuple[str, str], Callable[[pa.DataType], ColumnWriter]] = {
    ("str", "string"): _string,
    ("uuid", "string"): _string,
    ("int", "int"): _integer,
    ("bool", "bool"): _boolean,
    ("decimal", "decimal"): _decimal,
    ("datetime", "timestamp"): _timestamp,
    ("date", "date"): _date,
}
"""A core schema's type and the Arrow kind it is written from: pydantic reads the JSON as it reads the Python value."""
