"""Spark SQL text for :mod:`.compiling`: literals, names, and values written as canonical JSON writes them.

Every literal that holds a backslash, a quote, ``$`` or a character outside printable ASCII is written as UTF-8 bytes
(``decode(X'..', 'UTF-8')``), so that it means the same whatever the session's parser settings (escaped string
literals, variable substitution).
"""

from __future__ import annotations

import re

import msgspec

ERROR_TYPE = "STRUCT<field: STRING, reason: STRING>"
NO_ERROR = f"CAST(NULL AS {ERROR_TYPE})"
_PLAIN = re.compile(r"[A-Za-z0-9 _.,:;!?#%&*+=<>()\[\]{}|/@^~\"-]*")
_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPES = [("\\", "\\\\"), ('"', '\\"')] + [
    (chr(code), _SHORT_ESCAPES.get(chr(code), f"\\u{code:04x}")) for code in range(1, 32)
]
"""What canonical JSON (msgspec) writes for each character it escapes in a string, the backslash first (NUL is
refused before it is written)."""
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


def json_literal(value: object) -> str:
    """A SQL literal of ``value``'s JSON text as canonical JSON writes it."""
    return literal(msgspec.json.encode(value, order="sorted").decode())


def concat(*parts: str) -> str:
    """Text of ``parts`` in a row, adjacent literals joined (fewer pieces for Spark to evaluate)."""
    return f"concat({', '.join(parts)})" if len(parts) > 1 else parts[0]


def json_string(value: str) -> str:
    """A string value as a JSON string, escaped as canonical JSON escapes it (DEL, U+2028 and non-BMP characters
    stay as they are)."""
    escaped = value
    for character, escape in _ESCAPES:
        found = f"char({ord(character)})" if character < " " else literal(character)
        escaped = f"replace({escaped}, {found}, {literal(escape)})"
    needs = literal('[\\x00-\\x1f"\\\\]')
    return f"concat('\"', CASE WHEN {value} RLIKE {needs} THEN {escaped} ELSE {value} END, '\"')"


def has_nul(value: str) -> str:
    """Does the text ``value`` hold NUL (which canonical JSON refuses)?"""
    return f"instr({value}, char(0)) > 0"


def canonical_decimal(value: str, scale: int) -> str:
    """A DECIMAL value of ``scale`` as a JSON string in :func:`~nexus_queues.serialization.canonical_decimal`'s
    form: no trailing zeros, no exponent, ``0`` for zero (Spark writes no exponent and no negative zero)."""
    text = f"CAST({value} AS STRING)"
    if scale > 0:
        text = f"trim(TRAILING '.' FROM trim(TRAILING '0' FROM {text}))"  # Spark writes the point at a scale > 0
    return f"concat('\"', {text}, '\"')"


def decimal_digits(value: str) -> tuple[str, str]:
    """The digits in all and after the point of a DECIMAL value as pydantic counts them (trailing zeros dropped):
    two SQL integer expressions."""
    trimmed = f"regexp_replace(CAST(abs({value}) AS STRING), {literal('([.][0-9]*[1-9])0+$|[.]0+$')}, {literal('$1')})"
    text = f"regexp_replace({trimmed}, {literal('^0[.]')}, '.')"
    places = f"(CASE WHEN instr({text}, '.') > 0 THEN length({text}) - instr({text}, '.') ELSE 0 END)"
    whole = f"(CASE WHEN instr({text}, '.') > 0 THEN instr({text}, '.') - 1 ELSE length({text}) END)"
    return f"({whole} + {places})", places


def utc_timestamp(value: str) -> str:
    """A TIMESTAMP as a JSON string in UTC as pydantic writes an aware datetime whose offset is zero
    (``2024-01-02T03:04:05Z``, with six digits of fraction when there is one), whatever the session's time zone."""
    micros = f"unix_micros({value})"
    of_day = f"pmod({micros}, {DAY_MICROS}L)"
    day = f"date_from_unix_date(CAST(({micros} - {of_day}) DIV {DAY_MICROS}L AS INT))"
    fraction = f"{of_day} % 1000000L"

    def two(number: str) -> str:
        return f"lpad(CAST({number} AS STRING), 2, '0')"

    return concat(
        "'\"'",
        f"CAST({day} AS STRING)",
        "'T'",
        two(f"{of_day} DIV 3600000000L"),
        "':'",
        two(f"({of_day} DIV 60000000L) % 60"),
        "':'",
        two(f"({of_day} DIV 1000000L) % 60"),
        f"CASE WHEN {fraction} = 0 THEN '' ELSE concat('.', lpad(CAST({fraction} AS STRING), 6, '0')) END",
        "'Z\"'",
    )


def error(path: str, reason: str) -> str:
    """An error struct: the field's path and the reason (both SQL text)."""
    return f"named_struct('field', {path}, 'reason', {reason})"


def first_error(checks: list[tuple[str, str]]) -> str:
    """The error of the first check failing (SQL condition, SQL error struct), else NULL: an ARRAY of one."""
    if not checks:
        return ""
    branches = " ".join(f"WHEN {condition} THEN {found}" for condition, found in checks)
    return f"array(CASE {branches} ELSE {NO_ERROR} END)"
