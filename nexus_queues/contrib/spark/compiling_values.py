"""A message class's values compiled into Spark SQL, walking pydantic's core schema beside the DataFrame's Spark type:
for each value, its canonical JSON text and the errors pydantic (or canonical JSON) would find in it.

Only what :mod:`.compiling` documents is compiled; anything else raises :class:`NotCompilable` naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from copy import copy
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, create_model
from pyspark.sql.types import ArrayType, DataType, StructType

from ...exceptions import NotCompilable
from ...limits import MAX_JSON_DEPTH
from ...message_fields import in_utc
from ...serialization import canonical_json
from . import compiling_sql as sql
from .compiling_paths import Path, dotted
from .compiling_scalars import count, scalar

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
_DEFAULT_FACTORIES = (list, dict, set, frozenset, tuple)


@dataclass(frozen=True)
class Compiled:
    """A value as ``to_json`` is to write it (SQL; what a valid row holds), its errors (SQL arrays of error structs,
    NULLs in them meaning none) and the checks it passes when it has none (SQL, each NOT NULL)."""

    json: str
    errors: list[str] = field(default_factory=list)
    valid: list[str] = field(default_factory=list)


@dataclass
class Walk:
    """What the walk carries: the core schema's definitions, the session's time zone, the models being walked."""

    time_zone: str
    definitions: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    models: list[type] = field(default_factory=list)

    def value(
        self,
        schema: Mapping[str, Any],
        value: str,
        data_type: DataType,
        at: Path,
        *,
        nullable: bool = False,
        utc: bool = False,
    ) -> Compiled:
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
            return self.sequence(schema, value, data_type, at, nullable)
        return self.scalar(kind, schema, value, data_type, at, nullable, utc)

    def scalar(
        self, kind: str, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, nullable: bool, utc: bool
    ) -> Compiled:
        json, checks, invalid = scalar(kind, schema, value, data_type, at, utc, self.time_zone)
        loc = dotted(at.loc)
        failing = [] if nullable else [(f"{value} IS NULL", sql.error(loc, sql.literal(invalid)))]
        failing += [(condition, sql.error(loc, reason)) for condition, reason in checks]
        if kind == "str":  # as canonical JSON refuses it: named by its class and output keys
            dump = dotted(at.dump)
            reason = sql.concat(dump, sql.literal(": holds NUL (\\x00), which PostgreSQL cannot store."))
            failing.append((sql.has_nul(value), sql.error(dump, reason)))
        errors = sql.first_error(failing)
        return Compiled(json, [errors] if errors else [], [sql.passes([c for c, _ in failing])] if failing else [])

    def sequence(
        self, schema: Mapping[str, Any], value: str, data_type: DataType, at: Path, nullable: bool
    ) -> Compiled:
        """A list from an array column."""
        if not isinstance(data_type, ArrayType):
            raise NotCompilable(f"field {at.name}: a list from a {data_type.simpleString()} column.")
        depth = len(at.loc)
        item_var, index_var = f"nexus_x{depth}", f"nexus_i{depth}"  # not a column's name, which it would hide
        item = self.value(
            schema.get("items_schema", {"type": "any"}), item_var, data_type.elementType, at.index(index_var)
        )
        json = value if item.json == item_var else f"transform({value}, {item_var} -> {item.json})"
        loc = dotted(at.loc)
        invalid = sql.error(loc, sql.literal("Input should be a valid list"))
        branches = [] if nullable else [(f"{value} IS NULL", invalid)]
        if (most := schema.get("max_length")) is not None:
            reason = sql.concat(
                sql.literal(f"List should have at most {count(most, 'item')} after validation, not "),
                f"CAST(size({value}) AS STRING)",
            )
            branches.append((f"size({value}) > {most}", sql.error(loc, reason)))
        items = (
            f"flatten(transform({value}, ({item_var}, {index_var}) -> {_joined(item.errors)}))" if item.errors else ""
        )
        if (least := schema.get("min_length")) is not None:
            reason = sql.concat(
                sql.literal(f"List should have at least {count(least, 'item')} after validation, not "),
                f"CAST(size({value}) AS STRING)",
            )
            short = f"array({sql.error(loc, reason)})"
            if items:
                found, none = f"nexus_e{depth}", f"nexus_v{depth}"
                none_found = f"size(filter({found}, {none} -> {none} IS NOT NULL)) = 0"
                items = (
                    f"element_at(transform(array({items}), {found} -> CASE WHEN {none_found} AND size({value}) < "
                    f"{least} THEN {short} ELSE {found} END), 1)"
                )
            else:
                branches.append((f"size({value}) < {least}", sql.error(loc, reason)))
        failing = [condition for condition, _ in branches]
        if least is not None and items:
            failing.append(f"size({value}) < {least}")
        valid = [sql.passes(failing)] if failing else []
        if item.valid:
            valid.append(f"coalesce(forall({value}, {item_var} -> {sql.all_of(item.valid)}), true)")
        if nullable and valid:
            valid = [f"({value} IS NULL OR {sql.all_of(valid)})"]
        if not branches and not items:
            return Compiled(json, [], valid)
        cases = " ".join(f"WHEN {condition} THEN array({error})" for condition, error in branches)
        if nullable:
            cases = f"WHEN {value} IS NULL THEN array({sql.NO_ERROR}) {cases}"
        rest = items or f"array({sql.NO_ERROR})"
        return Compiled(json, [f"CASE {cases} ELSE {rest} END" if cases else rest], valid)

    def model(self, schema: Mapping[str, Any], value: str, data_type: StructType, at: Path, nullable: bool) -> Compiled:
        """A nested model from a struct column (``value`` NULL-able)."""
        model = schema["cls"]
        json, errors, valid = self.fields(schema, data_type, lambda key: f"{value}.{sql.name(key)}", at)
        if nullable:
            json = f"CASE WHEN {value} IS NULL THEN NULL ELSE {json} END"
            if not errors:
                return Compiled(json)
            return Compiled(
                json,
                [f"CASE WHEN {value} IS NULL THEN array({sql.NO_ERROR}) ELSE {_joined(errors)} END"],
                [f"({value} IS NULL OR {sql.all_of(valid)})"],
            )
        invalid = sql.error(
            dotted(at.loc), sql.literal(f"Input should be a valid dictionary or instance of {model.__name__}")
        )
        return Compiled(
            json,
            [f"CASE WHEN {value} IS NULL THEN array({invalid}) ELSE {_joined(errors)} END"],
            [f"{value} IS NOT NULL", *valid],
        )

    def fields(
        self, schema: Mapping[str, Any], columns: StructType, access: Callable[[str], str], at: Path
    ) -> tuple[str, list[str], list[str]]:
        """A model as a struct for ``to_json`` (SQL), its errors and its checks, its fields from ``columns`` (each
        read by ``access``)."""
        model = schema["cls"]
        if model in self.models or len(self.models) >= MAX_JSON_DEPTH:
            raise NotCompilable(f"field {at.name}: a recursive model, or one nested too deep.")
        if schema.get("custom_init") or schema.get("root_model") or schema.get("post_init"):
            raise NotCompilable(f"field {at.name}: {model.__name__} has its own __init__, model_post_init or root.")
        inner = schema["schema"]
        if (
            inner["type"] != "model-fields"
            or inner.get("computed_fields")
            or set(inner) - {"type", "fields", "model_name", "computed_fields"}
        ):
            raise NotCompilable(f"field {at.name}: {model.__name__} has a model validator or computed fields.")
        config = model.model_config
        extra = config.get("extra") or "ignore"
        if extra == "allow":
            raise NotCompilable(f"field {at.name}: {model.__name__} allows extra fields.")
        by_name = config.get("populate_by_name") or config.get("validate_by_name")
        self.models.append(model)
        names: dict[str, str] = {}
        for column in columns.fields:
            if column.name.lower() in names:
                raise NotCompilable(
                    f"field {at.name}: columns {column.name!r} and {names[column.name.lower()]!r} differ only in case."
                )
            names[column.name.lower()] = column.name
        types = {column.name: column.dataType for column in columns.fields}
        members: list[tuple[str, str]] = []
        errors: list[str] = []
        valid: list[str] = []
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
                valid += compiled.valid
            elif (default := _default(model, attribute, place)) is not None:
                members.append((output, default))
            else:
                errors.append(f"array({sql.error(dotted(place.loc), sql.literal('Field required'))})")
                valid.append("false")
        if extra == "forbid":
            for extra_column in types:
                if extra_column not in used:
                    reason = sql.literal("Extra inputs are not permitted")
                    errors.append(f"array({sql.error(dotted(at.key(extra_column, extra_column).loc), reason)})")
                    valid.append("false")
        self.models.pop()
        if not members:
            raise NotCompilable(f"field {at.name}: {model.__name__} has no field to write (Spark has no empty struct).")
        members.sort()
        pairs = ", ".join(f"{sql.literal(output)}, {text}" for output, text in members)
        return f"named_struct({pairs})", errors, valid


def _joined(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else f"concat({', '.join(errors)})"


def _default(model: type, attribute: str, at: Path) -> str | None:
    """A field's default (a missing column's value) as SQL that ``to_json`` writes as canonical JSON does, or None
    when it has none."""
    info = model.model_fields[attribute]  # type: ignore[attr-defined]
    if info.is_required():
        return None
    if info.default_factory is not None and info.default_factory not in _DEFAULT_FACTORIES:
        raise NotCompilable(f"field {at.name}: a default_factory of its own (the JVM path writes one value).")
    probe = create_model("Default", __base__=BaseModel, value=(info.annotation, copy(info)))
    (found,) = json.loads(canonical_json(probe())).values()
    try:
        return sql.value_literal(found)
    except ValueError as exc:
        raise NotCompilable(f"field {at.name}: a default {found!r} Spark would write otherwise.") from exc
