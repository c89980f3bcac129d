"""``manage.py nexus_rehash``: rewrite stored messages that an older version wrote in another canonical JSON."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from nexus_queues.exceptions import NotRegistered
from nexus_queues.registry import registry
from nexus_queues.rehashing import rehash


class Command(BaseCommand):
    help = (
        "Rewrite the message and hash of stored rows whose JSON writes a decimal other than canonically "
        "(24.90 for 24.9), so that the same message enqueued or synced again is recognised as unchanged. "
        "Statuses are kept: nothing runs again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--queue", action="append", help="A queue to rehash (repeat for several); default: all.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            queues = [registry.get(name) for name in options["queue"]] if options["queue"] else list(registry)
        except NotRegistered as exc:
            raise CommandError(str(exc)) from exc
        for message_class in queues:
            try:
                done = rehash(message_class)
            except DatabaseError as exc:
                raise CommandError(f"Queue {message_class.queue_name()}: {exc}") from exc
            unreadable = f", {done.unreadable} not fitting their class left as they are" if done.unreadable else ""
            self.stdout.write(f"{done.queue}: {done.rewritten} of {done.examined} rows rewritten{unreadable}.")
