"""Spark SQL text for :mod:`.compiling`: literals, names, and values written as canonical JSON writes them.

Every literal that holds a backslash, a quote, ``$`` or a character outside printable ASCII is written as UTF-8 bytes
(``decode(X'..', 'UTF-8')``), so that it means the same whatever the session's parser settings (escaped string
literals, variable substitution).
"""

from __future__ import annotations

import re

ERROR_TYPE = "STRUCT<field: STRING, reason: STRING>"
NO_ERROR = f"CAST(NULL AS {ERROR_TYPE})"
_PLAIN = re.compile(r"[A-Za-z0-9 _.,:;!?#%&*+=<>()\[\]{}|/@^~\"-]*")
_UPPER_ESCAPES = [code for code in range(1, 32) if any(digit in "abcdef" for digit in f"{code:04x}")]
"""The control characters whose escape Jackson (``to_json``) writes with upper-case hex (``\\u000B``) where canonical
JSON (msgspec) writes lower case; the rest of their escapes are alike."""
DAY_MICROS = 86_400_000_000
FIRST_MICROS, LAST_MICROS = -62_135_596_800_000_000, 253_402_300_799_999_999
"""The range of Python's datetime (the years 1 to 9999, in UTC) in microseconds from the epoch."""
FIRST_DAY, LAST_DAY = -719_162, 2_932_896
"""The range of Python's date in days from the epoch."""


def literal(text: str) -> str:
    """A Spark SQL string literal of ``text``."""
    if _PLAIN.fullmatch(text):
        return f"'{text}'"
    return f"decode(X'{text.encode().hex().upper()}', 'UTF-8')"


def name(column: str) -> str:
    """A column's or a struct field's name, quoted."""
    return "`" + column.replace("`", "``") + "`"


def to_json(struct: str) -> str:
    """A struct's JSON text, by Spark's own writer (Jackson), nulls written: canonical JSON's text when the struct's
    fields are in its order and forms, but for the case of some escapes (see :func:`lower_escapes`)."""
    return f"to_json({struct}, map('ignoreNullFields', 'false'))"


def lower_escapes(text: str) -> str:
    """JSON ``text`` with the upper-case hex of its escapes (``\\u000B``, as Jackson writes them) in lower case, as
    canonical JSON writes them; only real escapes (preceded by an even number of backslashes), only in rows that
    hold one."""
    fixed = text
    for code in _UPPER_ESCAPES:
        escape = f"\\\\u{code:04X}"  # a backslash, as a regex
        after_even_backslashes = literal("((?<![\\\\])(?:[\\\\]{2})*)" + escape)
        fixed = f"regexp_replace({fixed}, {after_even_backslashes}, {literal('$1' + escape.lower())})"
    upper = literal("[\\\\]u00(0[BEF]|1[A-F])")
    start = literal("\\u00")
    return f"CASE WHEN instr({text}, {start}) > 0 AND {text} RLIKE {upper} THEN {fixed} ELSE {text} END"


def value_literal(value: object) -> str:
    """SQL of a JSON value (as ``json.loads`` gives it) that ``to_json`` writes as canonical JSON does; ValueError for
    a float or an empty object."""
    if value is None:
        return "CAST(NULL AS STRING)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"CAST('{value}' AS {'BIGINT' if -(2**63) <= value < 2**63 else 'DECIMAL(38, 0)'})"
    if isinstance(value, str):
        return literal(value)
    if isinstance(value, list):
        return f"array({', '.join(value_literal(item) for item in value)})"
    if isinstance(value, dict) and value:
        return f"named_struct({', '.join(f'{literal(k)}, {value_literal(v)}' for k, v in sorted(value.items()))})"
    raise ValueError(value)


def concat(*parts: str) -> str:
    """Text of ``parts`` in a row, adjacent literals joined (fewer pieces for Spark to evaluate)."""
    return f"concat({', '.join(parts)})" if len(parts) > 1 else parts[0]


def has_nul(value: str) -> str:
    """Does the text ``value`` hold NUL (which canonical JSON refuses)?"""
    return f"instr({value}, char(0)) > 0"


def canonical_decimal(value: str, scale: int) -> str:
    """A DECIMAL value of ``scale`` as text in :func:`~nexus_queues.serialization.canonical_decimal`'s
    form: no trailing zeros, no exponent, ``0`` for zero (Spark writes no exponent and no negative zero)."""
    text = f"CAST({value} AS STRING)"
    if scale > 0:
        text = f"trim(TRAILING '.' FROM trim(TRAILING '0' FROM {text}))"  # Spark writes the point at a scale > 0
    return text


def decimal_digits(value: str) -> tuple[str, str]:
    """The digits in all and after the point of a DECIMAL value as pydantic counts them (trailing zeros dropped):
    two SQL integer expressions."""
    trimmed = f"regexp_replace(CAST(abs({value}) AS STRING), {literal('([.][0-9]*[1-9])0+$|[.]0+$')}, {literal('$1')})"
    text = f"regexp_replace({trimmed}, {literal('^0[.]')}, '.')"
    places = f"(CASE WHEN instr({text}, '.') > 0 THEN length({text}) - instr({text}, '.') ELSE 0 END)"
    whole = f"(CASE WHEN instr({text}, '.') > 0 THEN instr({text}, '.') - 1 ELSE length({text}) END)"
    return f"({whole} + {places})", places


def utc_timestamp(value: str) -> str:
    """A TIMESTAMP as text in UTC as pydantic writes an aware datetime whose offset is zero
    (``2024-01-02T03:04:05Z``, with six digits of fraction when there is one), whatever the session's time zone."""
    micros = f"unix_micros({value})"
    of_day = f"pmod({micros}, {DAY_MICROS}L)"
    day = f"date_from_unix_date(CAST(({micros} - {of_day}) DIV {DAY_MICROS}L AS INT))"
    fraction = f"{of_day} % 1000000L"

    def two(number: str) -> str:
        return f"lpad(CAST({number} AS STRING), 2, '0')"

    return concat(
        f"CAST({day} AS STRING)",
        "'T'",
        two(f"{of_day} DIV 3600000000L"),
        "':'",
        two(f"({of_day} DIV 60000000L) % 60"),
        "':'",
        two(f"({of_day} DIV 1000000L) % 60"),
        f"CASE WHEN {fraction} = 0 THEN '' ELSE concat('.', lpad(CAST({fraction} AS STRING), 6, '0')) END",
        "'Z'",
    )


def passes(failing: list[str]) -> str:
    """Does no condition of ``failing`` hold (a NULL one not holding)? NOT NULL."""
    return f"NOT coalesce({' OR '.join(failing)}, false)"


def all_of(conditions: list[str]) -> str:
    """Do all ``conditions`` (each NOT NULL) hold?"""
    return " AND ".join(conditions) if conditions else "true"


def error(path: str, reason: str) -> str:
    """An error struct: the field's path and the reason (both SQL text)."""
    return f"named_struct('field', {path}, 'reason', {reason})"


def first_error(checks: list[tuple[str, str]]) -> str:
    """The error of the first check failing (SQL condition, SQL error struct), else NULL: an ARRAY of one."""
    if not checks:
        return ""
    branches = " ".join(f"WHEN {condition} THEN {found}" for condition, found in checks)
    return f"array(CASE {branches} ELSE {NO_ERROR} END)"
