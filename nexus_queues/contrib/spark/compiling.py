"""A message class compiled into Spark SQL: each row's validation, canonical JSON and hash as column expressions that
run in Spark's JVM, so that no Python worker reads a row.

:func:`staged_columns` gives, for a DataFrame's schema, one SQL expression text per staged column (pass each to
``F.expr``, or all to ``df.selectExpr``); :func:`select_staged` selects them so that no expression is evaluated
twice, as :func:`select_keyed` (the id, JSON and hash) then :func:`select_checked` (the checks), which a sync runs
only on the rows that differ from the stored ones:

- ``message_id``: STRING, the id :func:`~nexus_queues.messages.message_id_of` gives; NULL for a class without identity.
- ``message``: STRING, the :func:`~nexus_queues.serialization.canonical_json` text ``enqueue()`` stores; NULL when
  the row is rejected.
- ``message_hash``: STRING, its :func:`~nexus_queues.serialization.json_hash`; NULL when rejected.
- ``errors``: STRING, NULL when the row is valid, else a JSON array of ``{"field": ..., "reason": ...}``, the field
  dotted as the Python path names it (``lines.0.quantity``).

What compiles: fields of text, int, bool, Decimal, date, aware datetime (``UtcDatetime`` in any session time zone, other
aware datetimes when the session's is UTC), str or int Enums and Literals, lists, nested models and optionals of
these, with ``ge/gt/le/lt``, ``min_length/max_length``, ``pattern`` (where Java's regex means what Rust's does) and
``max_digits/decimal_places``, from columns of the matching Spark type; a missing column takes the field's default, or
rejects every row (``Field required``) as pydantic does; a column that is no field is ignored or rejects every row, as
the class's ``extra`` says. The placement columns ``process_at``, ``expires_at`` and ``status`` (when not fields of
the class) are checked as ``enqueue()`` checks them and staged as :data:`PLACED_COLUMNS` of the same names. Anything
else (floats, dicts, UUIDs, validators and serializers of a project's own, a ``headers`` column) raises
:class:`NotCompilable`, saying why: that sync takes the Python path.

The JSON is Spark's own ``to_json`` of one struct per row, in canonical JSON's key order and forms; a row's errors
are built only when it fails the cheap check of all its constraints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.types import StructType

from ...exceptions import NotCompilable
from ...messages import QueueMessage
from . import compiling_sql as sql
from .compiling_paths import Path
from .compiling_placement import PLACED_COLUMNS, placement
from .compiling_scalars import UTC_ZONES
from .compiling_values import Walk
from .rows import PLACEMENT_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "PLACED_COLUMNS",
    "STAGED_COLUMNS",
    "UTC_ZONES",
    "NotCompilable",
    "select_checked",
    "select_keyed",
    "select_staged",
    "session_time_zone",
    "staged_columns",
]

STAGED_COLUMNS = ("message_id", "message", "message_hash", "errors")
"""The names of :func:`staged_columns`' expressions, in order."""
KEYED_COLUMNS = STAGED_COLUMNS[:3]
"""The columns :func:`select_keyed` gives, whatever a row's checks find."""
_JSON = "nexus_message_json"
_ERRORS = "nexus_errors"


def staged_columns(message_class: type[QueueMessage], schema: StructType, *, time_zone: str = "UTC") -> dict[str, str]:
    """Spark SQL expressions over a DataFrame of ``schema``: :data:`STAGED_COLUMNS` by name (see the module).

    ``time_zone`` is the session's (``spark.sql.session.timeZone``): the zone Python would be given times in.
    Raises :class:`NotCompilable` when a field or a column is outside the supported set.
    """
    message_id, json, errors, placed = _compiled(message_class, schema, time_zone)
    message = f"CASE WHEN {errors} IS NULL THEN {sql.lower_escapes(json)} END"
    return {
        "message_id": f"CASE WHEN {errors} IS NULL THEN {message_id} END",
        "message": message,
        "message_hash": f"sha2({message}, 256)",
        "errors": errors,
        **{name: f"CASE WHEN {errors} IS NULL THEN {value} END" for name, value in placed.items()},
    }


def select_staged(
    frame: DataFrame,
    message_class: type[QueueMessage],
    keep: tuple[str, ...] = (),
    *,
    prefix: str = "",
    time_zone: str = "UTC",
) -> DataFrame:
    """``frame``'s rows staged: the columns ``keep``, then :data:`STAGED_COLUMNS` and the placement columns (each
    name after ``prefix``), each row validated and written once."""
    keyed = select_keyed(frame, message_class, prefix=prefix, time_zone=time_zone)
    return select_checked(keyed, message_class, frame.schema, keep, prefix=prefix, time_zone=time_zone)


def select_keyed(
    frame: DataFrame, message_class: type[QueueMessage], *, prefix: str = "", time_zone: str = "UTC"
) -> DataFrame:
    """``frame``'s columns, then each row's ``message_id``, ``message`` and ``message_hash`` (names after
    ``prefix``) whatever its checks would find: what a sync compares with the stored messages before it checks the
    rows that differ (three projections that Spark does not merge, as each refers to the one before more than
    once)."""
    message_id, json, _, _ = _compiled(message_class, frame.schema, time_zone)
    own = [sql.name(column) for column in frame.columns]
    key, message, hash_ = (sql.name(prefix + name) for name in KEYED_COLUMNS)
    return (
        frame.selectExpr(*own, f"{message_id} AS {key}", f"{json} AS {_JSON}")
        .selectExpr(*own, key, f"{sql.lower_escapes(_JSON)} AS {message}")
        .selectExpr(*own, key, message, f"sha2({message}, 256) AS {hash_}")
    )


def select_checked(
    keyed: DataFrame,
    message_class: type[QueueMessage],
    source: StructType,
    keep: tuple[str, ...] = (),
    *,
    prefix: str = "",
    time_zone: str = "UTC",
) -> DataFrame:
    """The rows of :func:`select_keyed` (from columns of ``source``) checked: the columns ``keep``, then
    :data:`STAGED_COLUMNS` and the placement columns, the id, message, hash and placement NULL in a row with
    errors."""
    _, _, errors, placed = _compiled(message_class, source, time_zone)
    kept = [sql.name(column) for column in keep]
    staged = {name: sql.name(prefix + name) for name in (*STAGED_COLUMNS, *placed)}
    keyed_columns = [staged[name] for name in KEYED_COLUMNS]
    return keyed.selectExpr(
        *kept, *keyed_columns, f"{errors} AS {_ERRORS}", *(f"{value} AS nexus_{name}" for name, value in placed.items())
    ).selectExpr(
        *kept,
        *(f"CASE WHEN {_ERRORS} IS NULL THEN {column} END AS {column}" for column in keyed_columns),
        f"{_ERRORS} AS {staged['errors']}",
        *(f"CASE WHEN {_ERRORS} IS NULL THEN nexus_{name} END AS {staged[name]}" for name in placed),
    )


def _compiled(
    message_class: type[QueueMessage], schema: StructType, time_zone: str
) -> tuple[str, str, str, dict[str, str]]:
    """The message id, the JSON text (Spark's: see :func:`.compiling_sql.lower_escapes`), the errors and the placement
    columns (SQL) of a row of ``schema``; the errors built only for a row that fails a check."""
    fields = set(message_class.model_fields)
    placed = placement(schema, fields)
    schema = StructType([c for c in schema.fields if c.name not in PLACEMENT_COLUMNS or c.name in fields])
    walk = Walk(time_zone)
    core = message_class.__pydantic_core_schema__
    while core["type"] in ("definitions", "definition-ref"):
        if core["type"] == "definitions":
            walk.definitions.update({d["ref"]: d for d in core["definitions"]})
            core = core["schema"]
        else:
            core = walk.definitions[core["schema_ref"]]
    if core["type"] != "model":
        raise NotCompilable(f"{message_class.__qualname__}: a model validator or serializer of its own.")
    top = Path((), (message_class.__qualname__,))
    struct, errors, valid = walk.fields(core, schema, sql.name, top)
    message_id, id_errors, id_valid = _message_id(message_class, schema)
    every = [*placed.errors, *errors, *id_errors]
    json = sql.to_json(struct)
    if not every:
        return message_id, json, "CAST(NULL AS STRING)", placed.columns
    joined = every[0] if len(every) == 1 else f"concat({', '.join(every)})"
    found = f"filter({joined}, nexus_e -> nexus_e IS NOT NULL)"
    errors_json = f"nullif(to_json({found}), '[]')"
    checks = sql.all_of([*placed.valid, *valid, *id_valid])
    return message_id, json, f"CASE WHEN NOT ({checks}) THEN {errors_json} END", placed.columns


def _message_id(message_class: type[QueueMessage], schema: StructType) -> tuple[str, list[str], list[str]]:
    """The message id (SQL), its errors and its checks, for a class whose id is one of its str or int fields."""
    if not message_class.has_identity:
        return "CAST(NULL AS STRING)", [], []
    attribute = _id_field(message_class)
    info = message_class.model_fields[attribute]
    key = info.validation_alias if isinstance(info.validation_alias, str) else info.alias or attribute
    name = f"{message_class.__qualname__}.message_id"
    columns = {c.name: c.dataType for c in schema.fields}
    if info.annotation not in (str, int):
        raise NotCompilable(f"field {attribute}: the message id from a {info.annotation} field, not a str or int.")
    if key not in columns:
        default = info.get_default(call_default_factory=True) if not info.is_required() else None
        value = sql.literal(str(default)) if isinstance(default, str | int) else "CAST(NULL AS STRING)"
    else:
        value = f"CAST({sql.name(key)} AS STRING)"
    empty = sql.error("'(message)'", sql.literal(f"{name} must be non-empty text, got ''."))
    long = sql.error("'(message)'", sql.literal(f"{name} is longer than 255."))
    check = f"array(CASE WHEN {value} = '' THEN {empty} WHEN length({value}) > 255 THEN {long} ELSE {sql.NO_ERROR} END)"
    if info.annotation is not str:
        return value, [], []
    return value, [check], [sql.passes([f"{value} = ''", f"length({value}) > 255"])]


class _Probe:
    """A field's value in a message built to see which field its ``message_id`` property returns."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute


def _id_field(message_class: type[QueueMessage]) -> str:
    """The field ``message_class.message_id`` gives as it is; NotCompilable for an id made otherwise."""
    if "message_id" in message_class.model_fields:
        return "message_id"
    probes: dict[str, Any] = {attribute: _Probe(attribute) for attribute in message_class.model_fields}
    try:
        found = message_class.model_construct(**probes).message_id  # type: ignore[attr-defined]
    except Exception as exc:  # the property's own code, given a probe instead of a value
        raise NotCompilable(f"{message_class.__qualname__}.message_id: made by code of its own ({exc}).") from exc
    if not isinstance(found, _Probe):
        raise NotCompilable(f"{message_class.__qualname__}.message_id: not one of its fields as it is.")
    return found.attribute


def message_key(message_class: type[QueueMessage], schema: StructType) -> str:
    """The message id of a row of ``schema`` as SQL, before any check (cheap: a column cast to text)."""
    return _message_id(message_class, schema)[0]


def session_time_zone(spark: SparkSession) -> str:
    """The session's time zone (``spark.sql.session.timeZone``), the ``time_zone`` to compile a class in."""
    return spark.conf.get("spark.sql.session.timeZone") or "UTC"
