"""Canonical JSON of messages: one text for storage, hashing and idempotency checks."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
from django.core.serializers.json import DjangoJSONEncoder
from pydantic import BaseModel

_canonical = msgspec.json.Encoder(order="sorted")


def canonical_json(data: Any) -> str:
    """JSON text with sorted keys and no spaces, so equal data gives equal text."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json", by_alias=True)
    try:
        return _canonical.encode(data).decode()
    except (TypeError, msgspec.EncodeError) as exc:
        raise TypeError(f"not JSON-serializable: {exc}") from exc


def json_hash(text: str) -> str:
    """SHA-256 hex digest of canonical JSON text."""
    return hashlib.sha256(text.encode()).hexdigest()


class MessageEncoder(DjangoJSONEncoder):
    """Django's JSON encoder that also writes pydantic messages as their JSON data."""

    def default(self, o: Any) -> Any:
        if isinstance(o, BaseModel):
            return o.model_dump(mode="json", by_alias=True)
        return super().default(o)
