"""A queue's rows as Arrow batches parsed in bulk from JSON lines the database writes, one object per row.

pyarrow's JSON reader (C++) makes a page's columns without a Python object per row. It is strict
where the per-row path (:mod:`.values`) forgives: a value it cannot parse as its column's type
raises :class:`_Unparsed`, and the reader reads that page again row by row. Texts of times, dates and
decimals are parsed here from strings, and only in the forms both parsers read alike; a number
where a decimal is stored is left to the per-row path, which reads it as its float.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ...backends.lines import MESSAGE

_YEAR = r"(000[1-9]|00[1-9]\d|0[1-9]\d\d|[1-9]\d{3})"  # Python's years: 1 to 9999
_HOURS = r"([01]\d|2[0-3]):[0-5]\d"
TIMESTAMP_TEXT = rf"^{_YEAR}-\d{{2}}-\d{{2}}T{_HOURS}:[0-5]\d(\.\d{{1,6}})?(Z|[+-]{_HOURS})?$"
"""The times read in bulk (those pydantic and PostgreSQL write); a time without an offset is in UTC."""
DATE_TEXT = rf"^{_YEAR}-\d{{2}}-\d{{2}}$"
DECIMAL_TEXT = r"^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
_ZONED = r"(Z|[+-]\d{2}:\d{2})$"
_READ = pj.ReadOptions(block_size=1 << 26)
"""Blocks large enough for a chunk's lines (a block holds whole lines)."""


class _Unparsed(Exception):
    """A page holds a value the bulk parser does not read as the per-row path would."""


@dataclass(frozen=True)
class BulkParser:
    """Parses JSON lines of a queue's rows into batches of ``target``: the row's columns as members, its
    message's fields (``fields``) from the message member."""

    target: pa.Schema
    fields: frozenset[str]
    parsing: pa.Schema
    """The schema the lines are parsed with: texts where ``target`` has times, dates or decimals."""

    @classmethod
    def of(cls, target: pa.Schema, fields: frozenset[str]) -> BulkParser | None:
        """The parser of ``target``, None when it holds a type JSON lines cannot give (a map)."""
        json_fields = {field.name: _json_field(field) for field in target}
        if any(field is None for field in json_fields.values()):
            return None
        rows = [json_fields[name] for name in target.names if name not in fields]
        if fields:
            rows.append(pa.field(MESSAGE, pa.struct([json_fields[name] for name in target.names if name in fields])))
        return cls(target, fields, pa.schema(rows))  # type: ignore[arg-type]

    def batch(self, lines: bytes) -> pa.RecordBatch:
        """The rows of ``lines`` (one JSON object per line) as a batch of ``target``, or :class:`_Unparsed`."""
        if not lines:
            return pa.RecordBatch.from_pylist([], schema=self.target)
        options = pj.ParseOptions(explicit_schema=self.parsing, unexpected_field_behavior="ignore")
        try:
            table = pj.read_json(io.BytesIO(lines), parse_options=options, read_options=_READ)
            parsed = dict(zip(self.parsing.names, table.columns, strict=True))
            if self.fields:
                message = _whole(parsed.pop(MESSAGE))
                if message.null_count:
                    raise _Unparsed("a message that is not an object")  # the per-row path reads it as defaults
                parsed |= dict(zip([field.name for field in message.type], message.flatten(), strict=True))
            columns = [_typed(_whole(parsed[field.name]), field) for field in self.target]
            return pa.RecordBatch.from_arrays(columns, schema=self.target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise _Unparsed(str(exc)) from exc


def _json_field(field: pa.Field) -> pa.Field | None:
    json_type = _json_type(field.type)
    return None if json_type is None else pa.field(field.name, json_type)


def _json_type(arrow_type: pa.DataType) -> pa.DataType | None:
    if pa.types.is_map(arrow_type):
        return None
    if pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type) or pa.types.is_decimal(arrow_type):
        return pa.string()
    if pa.types.is_struct(arrow_type):
        fields = [_json_field(arrow_type.field(i)) for i in range(arrow_type.num_fields)]
        return None if any(f is None for f in fields) else pa.struct(fields)  # type: ignore[arg-type]
    if pa.types.is_list(arrow_type):
        element = _json_type(arrow_type.value_type)
        return None if element is None else pa.list_(element)
    return arrow_type


def _whole(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _typed(array: pa.Array, field: pa.Field) -> pa.Array:
    """``array`` as parsed, made into ``field``'s type; :class:`_Unparsed` where a level that may not hold a
    null does (the per-row path makes the nearest level that may null instead)."""
    if not field.nullable and array.null_count:
        raise _Unparsed(f"null in {field.name}")
    arrow_type = field.type
    if pa.types.is_timestamp(arrow_type):
        _all_match(array, TIMESTAMP_TEXT)
        zoned = pc.if_else(pc.match_substring_regex(array, _ZONED), array, pc.binary_join_element_wise(array, "Z", ""))
        return zoned.cast(arrow_type)
    if pa.types.is_date(arrow_type):
        _all_match(array, DATE_TEXT)
        return array.cast(arrow_type)
    if pa.types.is_decimal(arrow_type):
        _all_match(array, DECIMAL_TEXT)
        return array.cast(arrow_type)
    if pa.types.is_struct(arrow_type):
        assert isinstance(array, pa.StructArray)
        children = [_typed(array.field(i), arrow_type.field(i)) for i in range(arrow_type.num_fields)]
        return pa.StructArray.from_arrays(
            children, fields=list(arrow_type), mask=array.is_null() if array.null_count else None
        )
    if pa.types.is_list(arrow_type):
        assert isinstance(array, pa.ListArray)
        values = _typed(array.values, arrow_type.value_field)
        return pa.ListArray.from_arrays(
            array.offsets, values, type=arrow_type, mask=array.is_null() if array.null_count else None
        )
    return array


def _all_match(texts: pa.Array, pattern: str) -> None:
    if pc.all(pc.match_substring_regex(texts, pattern), skip_nulls=True).as_py() is False:
        raise _Unparsed(f"a text not in the form {pattern}")
