"""STAND-IN for jvm-compile's compiler (to be replaced by its branch): a flat class of required str/int fields.

``staged_columns(message_class, schema)``: Spark SQL expressions of message_id, message (canonical JSON, NULL when
rejected), message_hash (NULL when rejected) and errors (NULL or a JSON array of {"field", "reason"}).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import IntegerType, LongType, StringType, StructType

from ...messages import QueueMessage

_TYPES: dict[Any, tuple[type, ...]] = {str: (StringType,), int: (IntegerType, LongType)}


class NotCompilable(Exception):
    """The message class or a column is outside what compiles to Spark column expressions."""


def staged_columns(message_class: type[QueueMessage], schema: StructType) -> dict[str, str]:
    """The staged columns of ``message_class`` as Spark SQL expressions over a DataFrame of ``schema``."""
    fields = message_class.model_fields
    types = {column.name: column.dataType for column in schema.fields}
    if set(types) != set(fields):
        raise NotCompilable(
            f"the columns ({', '.join(sorted(types))}) are not the fields ({', '.join(sorted(fields))})"
        )
    for name, field in fields.items():
        if field.annotation not in _TYPES or field.metadata or field.alias:
            raise NotCompilable(f"field {name} is not a plain str or int")
        if not isinstance(types[name], _TYPES[field.annotation]):
            raise NotCompilable(f"column {name} is {types[name].simpleString()}, not {field.annotation}")
    names = sorted(fields)
    errors = ", ".join(
        f"IF(`{n}` IS NULL, named_struct('field', '{n}', 'reason', 'Field required'), NULL)" for n in names
    )
    problems = f"filter(array({errors}), e -> e IS NOT NULL)"
    valid = f"size({problems}) = 0"
    pairs = ", ".join(f"'{n}', `{n}`" for n in names)
    message = f"IF({valid}, to_json(named_struct({pairs})), NULL)"
    return {
        "message_id": f"IF({valid}, {_identity(message_class)}, NULL)",
        "message": message,
        "message_hash": f"sha2({message}, 256)",
        "errors": f"IF({valid}, NULL, to_json({problems}))",
    }


def _identity(message_class: type[QueueMessage]) -> str:
    if not message_class.has_identity:
        return "CAST(NULL AS STRING)"
    values: dict[str, Any] = {n: f"probe-{n}" if f.annotation is str else 7 for n, f in message_class.model_fields.items()}
    probe = message_class.model_construct(**values)
    found = [n for n in message_class.model_fields if getattr(probe, n) == probe.message_id]  # type: ignore[attr-defined]
    if len(found) != 1:
        raise NotCompilable("its message_id is not one of its fields")
    return f"CAST(`{found[0]}` AS STRING)"
