"""Migration DDL that depends on the engine: the index behind the admin's search in messages."""

from __future__ import annotations

from collections.abc import Callable

Quote = Callable[[str], str]


def postgresql_search_index(quote: Quote, table: str, name: str) -> list[str]:
    """A trigram index on exactly the expression Django's JSON icontains searches."""
    return [
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} USING gin ((UPPER(message::text)) gin_trgm_ops)",
    ]


def postgresql_drop_search_index(quote: Quote, table: str, name: str) -> list[str]:
    """Drop that index."""
    return [f"DROP INDEX IF EXISTS {quote(name)}"]
