"""The placement columns (``process_at``, ``expires_at``, ``status``) compiled into Spark SQL, checked as
:func:`~nexus_queues.enqueueing.resolve_placement` checks enqueue's options on the Python path: aware times in the
stored range, a status one may set, not a time and a status together; a row with a ``process_at`` is Sleeping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark.sql.types import StringType, StructType, TimestampType

from ...exceptions import NotCompilable
from ...limits import EARLIEST_DATETIME, LATEST_DATETIME
from ...status import MAX_STATUS_LENGTH, Status
from . import compiling_sql as sql
from .rows import PLACEMENT_COLUMNS

PLACED_COLUMNS = ("process_at", "expires_at", "status")
"""The placement columns the JVM path compiles, each staged under its own name (``headers`` is not compiled)."""
_NO_STATUS = "CAST(NULL AS STRING)"
_RANGE = (
    f"the supported range {EARLIEST_DATETIME.isoformat()} to {LATEST_DATETIME.isoformat()} "
    "(EARLIEST_DATETIME to LATEST_DATETIME)"
)


@dataclass(frozen=True)
class Placement:
    """The staged placement columns (SQL by name), their errors (SQL arrays of error structs) and checks."""

    columns: dict[str, str]
    errors: list[str]
    valid: list[str]


def placement(schema: StructType, fields: set[str]) -> Placement:
    """The placement a row of ``schema`` asks for, from its placement columns that are not among ``fields``."""
    types = {c.name: c.dataType for c in schema.fields if c.name in PLACEMENT_COLUMNS and c.name not in fields}
    if "headers" in types:
        raise NotCompilable("column headers: headers are written by the Python path only.")
    if not types:
        return Placement({}, [], [])
    for column, data_type in types.items():
        wanted = StringType if column == "status" else TimestampType
        if not isinstance(data_type, wanted):
            raise NotCompilable(f"column {column}: a placement column from a {data_type.simpleString()} column.")
    process_at = sql.name("process_at") if "process_at" in types else "CAST(NULL AS TIMESTAMP)"
    expires_at = sql.name("expires_at") if "expires_at" in types else "CAST(NULL AS TIMESTAMP)"
    status = sql.name("status") if "status" in types else _NO_STATUS
    status_reason = _status_reason(status)
    together = f"{process_at} IS NOT NULL AND {status} IS NOT NULL"
    # The Python path blames the first column refused alone, else the status given with a time.
    error = sql.first_error(
        [
            (_outside(process_at), sql.error("'process_at'", _outside_reason("at", process_at))),
            (f"{status_reason} IS NOT NULL", sql.error("'status'", status_reason)),
            (_outside(expires_at), sql.error("'expires_at'", _outside_reason("expires_at", expires_at))),
            (together, sql.error("'status'", sql.literal(_TOGETHER))),
        ]
    )
    valid = sql.passes([_outside(process_at), f"{status_reason} IS NOT NULL", _outside(expires_at), together])
    columns: dict[str, str] = {name: sql.name(name) for name in ("process_at", "expires_at") if name in types}
    columns["status"] = f"CASE WHEN {process_at} IS NOT NULL THEN '{Status.SLEEPING.value}' ELSE {status} END"
    return Placement(columns, [error], [valid])


_TOGETHER = "A scheduled message is Sleeping until its time: give status or at/delay, not both."
_EPOCH, _MICRO = datetime(1970, 1, 1, tzinfo=UTC), timedelta(microseconds=1)
_FIRST_MICROS, _LAST_MICROS = (EARLIEST_DATETIME - _EPOCH) // _MICRO, (LATEST_DATETIME - _EPOCH) // _MICRO


def _outside(value: str) -> str:
    return f"unix_micros({value}) NOT BETWEEN {_FIRST_MICROS}L AND {_LAST_MICROS}L"


def _outside_reason(name: str, value: str) -> str:
    """As :func:`~nexus_queues.limits.check_datetime` says it, the time in UTC."""
    iso = f"replace({sql.utc_timestamp(value)}, 'Z', '+00:00')"
    return sql.concat(sql.literal(f"{name}: "), iso, sql.literal(f" is outside {_RANGE}."))


def _status_reason(status: str) -> str:
    """Why :func:`~nexus_queues.status.validate_settable_status` refuses ``status`` (SQL), else NULL."""
    if status == _NO_STATUS:
        return _NO_STATUS
    quote = sql.literal("'")
    quoted = f"concat({quote}, {status}, {quote})"  # Python's repr of a status of printable ASCII but quotes
    malformed = sql.literal(" is malformed: start with a letter; use letters, digits, spaces, '_', '.' or '-'.")
    form = sql.literal("^[A-Za-z][A-Za-z0-9 _.\\-]*\\z")
    cases = [
        (f"length({status}) > {MAX_STATUS_LENGTH}", f"' is longer than {MAX_STATUS_LENGTH} characters.'"),
        (f"NOT ({status} RLIKE {form}) OR {status} LIKE '% '", malformed),
    ]
    branches = [f"WHEN {condition} THEN concat('Status ', {quoted}, {tail})" for condition, tail in cases]
    for builtin in Status:
        other_case = f"lower({status}) = '{builtin.value.lower()}' AND {status} != '{builtin.value}'"
        tail = sql.literal(f" differs from the built-in {builtin.value!r} only in case.")
        branches.append(f"WHEN {other_case} THEN concat('Status ', {quoted}, {tail})")
    branches.append(f"WHEN {status} = '{Status.LEASED.value}' THEN 'Only lease() sets messages Leased.'")
    sleeping = "Sleeping needs a time: use reschedule(at) or enqueue(..., at=...)."
    branches.append(f"WHEN {status} = '{Status.SLEEPING.value}' THEN {sql.literal(sleeping)}")
    return f"CASE {' '.join(branches)} END"
