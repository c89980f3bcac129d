"""Strict JSON for what comes from outside: refused while parsing when no engine could store it."""

import re

import pytest

from nexus_queues.exceptions import NexusQueuesError
from nexus_queues.json_input import MalformedJSON, loads


@pytest.mark.parametrize(
    ("text", "words"),
    [('{"a": NaN}', "at 'NaN}'"), ('[1, -Infinity]', "Infinity"), ('{"a": 1e400}', "out of range"),
     ('{"a": -1e400}', "out of range"), ('["\\ud800"]', "lone surrogate"), ('["\\udc00x"]', "lone surrogate"),
     ('{"\\ud800": 1}', "lone surrogate"), (b'["\xff"]', "not UTF-8"), ("[" * 10_000 + "]" * 10_000, "too deeply"),
     ('{"a": 1} x', "trailing characters"), ("", "truncated")],
)
def test_loads__refuses_what_is_not_strict_json(text, words):
    """NaN, Infinity, numbers past a double, lone surrogates, bad UTF-8, runaway depth: refused, saying which."""
    with pytest.raises(MalformedJSON, match=words):
        loads(text)


@pytest.mark.parametrize(
    ("text", "path"),
    [('"a\\u0000"', "$"), ('{"a": [1, {"b": "x\\u0000"}]}', "$.a[1].b"), ('{"k\\u0000": 1}', "$")],
)
def test_loads__refuses_nul_naming_where(text, path):
    """A string or key holding NUL (PostgreSQL cannot store it) is refused with its JSONPath."""
    with pytest.raises(MalformedJSON, match=rf"at {re.escape(path)} holds a NUL"):
        loads(text)


@pytest.mark.parametrize(
    ("text", "data"),
    [('{"a": [1, 2.5, "\\ud83d\\ude00", null, true]}', {"a": [1, 2.5, "\U0001f600", None, True]}),
     ('"\\\\u0000"', "\\u0000"), ("123456789012345678901234567890", 123456789012345678901234567890),
     ("[" * 3 + "]" * 3, [[[]]])],
)
def test_loads__reads_strict_json(text, data):
    """Strict JSON reads as json.loads would: surrogate pairs, an escaped backslash before u0000, big ints."""
    assert loads(text) == data


def test_malformed_json__is_one_of_ours():
    assert issubclass(MalformedJSON, NexusQueuesError) and issubclass(MalformedJSON, ValueError)
