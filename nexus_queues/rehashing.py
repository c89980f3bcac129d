"""Stored messages rewritten in today's canonical JSON: rows an older version wrote with decimals at another scale."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connections
from pydantic import ValidationError

from .messages import QueueMessage
from .registry import registry
from .serialization import json_hash, with_canonical_decimals

logger = logging.getLogger("nexus_queues.rehashing")
BATCH_SIZE = 1000


@dataclass(frozen=True)
class Rehashed:
    """What :func:`rehash` did to one queue's rows."""

    queue: str
    examined: int
    rewritten: int
    unreadable: int
    """Rows whose stored JSON no longer fits the class, left as they are."""


def rehash(message_class: type[QueueMessage], batch_size: int = BATCH_SIZE) -> Rehashed:
    """Rewrite the message and hash of the queue's rows whose stored JSON writes a decimal other than canonically.

    Only those rows are written, and only those two columns: a row keeps its status, so nothing runs again.
    A row changed meanwhile (its hash is no longer the one read) is left to the change.
    """
    items = message_class.queue_items()
    examined = rewritten = unreadable = 0
    last = None
    while True:
        page = items.order_by("pk").values_list("pk", "message", "message_hash")
        rows = list((page.filter(pk__gt=last) if last is not None else page)[:batch_size])
        if not rows:
            return Rehashed(message_class.queue_name(), examined, rewritten, unreadable)
        for pk, stored, stored_hash in rows:
            try:
                fixed = with_canonical_decimals(stored, message_class)
            except ValidationError:  # a row that no longer fits its class is left for a person to judge
                unreadable += 1
                continue
            if fixed is not None:
                rewritten += items.filter(pk=pk, message_hash=stored_hash).update(
                    message=fixed[0], message_hash=json_hash(fixed[1])
                )
        examined, last = examined + len(rows), rows[-1][0]


def rehash_all(using: str, queues: Iterable[type[QueueMessage]] | None = None) -> list[Rehashed]:
    """:func:`rehash` each registered queue (or each of ``queues``) kept on database ``using`` whose table exists."""
    tables = set(connections[using].introspection.table_names())
    done = []
    for message_class in registry if queues is None else queues:
        if message_class.queue_options.database == using and message_class.queue_model._meta.db_table in tables:
            done.append(rehash(message_class))
            logger.info("Rehashed %s: %s", message_class.queue_name(), done[-1], extra={"action": "rehashed"})
    return done
