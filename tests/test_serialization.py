"""Canonical JSON: equal data, equal text, whatever the key order."""

from nexus_queues.serialization import canonical_json, json_hash
from tests.testapp.queues import Product


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
