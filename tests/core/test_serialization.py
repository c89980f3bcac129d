"""Canonical JSON: equal data, equal text, whatever the key order."""

import math

import pytest
from pydantic import BaseModel

from nexus_queues.exceptions import UnstorableValue
from nexus_queues.limits import MAX_JSON_DEPTH
from nexus_queues.serialization import canonical_json, json_hash
from tests.testapp.queues import Audit, Product


class Point(BaseModel):
    """A plain pydantic model inside a message: its own config lets NaN into its float field."""

    x: float


def test_canonical_json__ignores_key_order():
    """Dictionaries with the same items in another order give the same text and hash."""
    a = Product(sku="A", name="n", attributes={"color": "red", "size": "L"})
    b = Product(sku="A", name="n", attributes={"size": "L", "color": "red"})
    assert canonical_json(a) == canonical_json(b)
    assert json_hash(canonical_json(a)) == json_hash(canonical_json(b))


def test_canonical_json__differs_when_data_differs():
    """A changed value changes the hash."""
    a = Product(sku="A", name="n")
    assert json_hash(canonical_json(a)) != json_hash(canonical_json(a.model_copy(update={"name": "m"})))


def test_canonical_json__keeps_unicode_readable():
    """Text is stored as written, not as escapes."""
    assert canonical_json({"name": "Åsa"}) == '{"name":"Åsa"}'


def deep(depth):
    """Objects nested ``depth`` deep, the outermost counting as 1."""
    data = {}
    for _ in range(depth - 1):
        data = {"a": data}
    return data


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf, float("1e400")])
@pytest.mark.parametrize(
    ("place", "field"),
    [
        (lambda n: Audit(event="e", details={"x": n}), "Audit.details.x"),
        (lambda n: Audit(event="e", details={"x": [1, n]}), "Audit.details.x.1"),
        (lambda n: Audit.model_construct(event="e", duration=n, details={}), "Audit.duration"),
        (lambda n: Audit(event="e", details={"at": Point(x=n)}), "Audit.details.at.x"),
    ],
)
def test_canonical_json__refuses_nan_and_infinities(number, place, field):
    """NaN and infinities, which JSON cannot hold, are refused wherever they are, naming the field."""
    with pytest.raises(UnstorableValue, match="not a JSON number") as caught:
        canonical_json(place(number))
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        ({"name": "a\x00b"}, "value.name", "NUL"),
        ({"list": ["ok", "\x00"]}, "value.list.1", "NUL"),
        ({"key\x00": 1}, "value", r"key 'key\\x00' holds NUL"),
        ({"name": "\ud800"}, "value.name", "lone surrogate"),
        ({"a": {"\udfff": 1}}, "value.a", "key '\\\\udfff' holds a lone surrogate"),
    ],
)
def test_canonical_json__refuses_text_some_engines_cannot_store(data, field, problem):
    """NUL (PostgreSQL refuses it) and lone surrogates (not UTF-8) are refused in values and keys."""
    with pytest.raises(UnstorableValue, match=problem) as caught:
        canonical_json(data)
    assert caught.value.field == field


def test_canonical_json__nesting_up_to_the_limit():
    """MAX_JSON_DEPTH levels are kept; one more is refused, naming where, however deep it goes."""
    assert canonical_json(Audit(event="e", details=deep(MAX_JSON_DEPTH - 1))).count("{") == MAX_JSON_DEPTH
    for depth in (MAX_JSON_DEPTH, 900):
        with pytest.raises(UnstorableValue, match=f"deeper than {MAX_JSON_DEPTH}") as caught:
            canonical_json(Audit(event="e", details=deep(depth)))
        assert caught.value.field == "Audit.details" + ".a" * (MAX_JSON_DEPTH - 1)
    with pytest.raises(UnstorableValue, match=f"deeper than {MAX_JSON_DEPTH}"):
        canonical_json([deep(5000)], "headers")


def test_canonical_json__nesting_counted_through_arrays_among_siblings():
    """Depth counts objects and arrays alike, however many siblings surround the deepest branch."""
    branch = {"a": 1}
    for level in range(MAX_JSON_DEPTH - 3):  # with the message and its details: MAX_JSON_DEPTH levels
        branch = [branch] if level % 2 else {"b": branch, "c": [1, 2, 3]}
    siblings = {"items": [{"x": [1, 2]} for _ in range(40)], "deep": branch}
    assert canonical_json(Audit(event="e", details=siblings))
    with pytest.raises(UnstorableValue, match=f"deeper than {MAX_JSON_DEPTH}"):
        canonical_json(Audit(event="e", details={**siblings, "deep": [branch]}))


def test_canonical_json__integers_python_cannot_read_back_are_refused():
    """An integer longer than Python reads back from JSON (4300 digits) is refused, not stored, naming its field."""
    with pytest.raises(UnstorableValue, match="Audit.details.n: An integer of 16610 bits is outside the signed 64-bit"):
        canonical_json(Audit(event="e", details={"n": 10**5000}))


def test_canonical_json__null_and_text_that_looks_bad_are_kept():
    """null, the word NaN, a backslash before u0000 and U+FFFD are ordinary JSON, kept as they are."""
    details = {"a": None, "b": "NaN", "c": "\\u0000", "d": "null", "\ufffd": "\ufffd", "n": [52095, -1]}
    assert canonical_json(Audit(event="e", details=details)) == (
        '{"details":{"a":null,"b":"NaN","c":"\\\\u0000","d":"null","n":[52095,-1],"\ufffd":"\ufffd"},'
        '"duration":0.0,"event":"e"}'
    )
