"""``manage.py nexus_rabbitmq_consume``: consume an AMQP queue into a nexus queue."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from django.core.management.base import CommandError

from nexus_queues.exceptions import InvalidMode, NotRegistered, SourceNotFound
from nexus_queues.management.arguments import at_least
from nexus_queues.management.processes import ProcessCommand
from nexus_queues.registry import registry
from nexus_queues.worker import logs

from ...consuming import DEFAULT_PREFETCH, Consumer

MAX_PREFETCH = 65535
"""AMQP's prefetch count is a 16-bit number."""


def prefetch(text: str) -> int:
    """An argparse type: a prefetch count, 1 to 65535."""
    value = at_least(1)(text)
    if value > MAX_PREFETCH:
        raise argparse.ArgumentTypeError(f"{value} is more than {MAX_PREFETCH}")
    return value


def quiet_pika(verbosity: int) -> None:
    """Below ``-v 2``, pika logs only critical records unless ``LOGGING`` gave it a level: it logs every
    connection attempt, and the consumer reports an outage once itself."""
    pika_logger = logging.getLogger("pika")
    if verbosity < 2 and pika_logger.level == logging.NOTSET:
        pika_logger.setLevel(logging.CRITICAL)


class Command(ProcessCommand):
    help = (
        "Consume an AMQP queue into a nexus queue: each body is validated by the queue's message class, stored, "
        "committed, and only then acknowledged. Invalid bodies are dead-lettered to <from>.invalid or rejected "
        "(NEXUS_RABBITMQ['INVALID_MESSAGES']) and logged. A crash between commit and acknowledgement makes the "
        "broker deliver again: use a queue with identity (QueueMessageWithId), which replaces or, idempotent, "
        "discards the redelivery; a queue without identity stores it twice."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--from", dest="source", required=True, metavar="AMQP_QUEUE",
                            help="The AMQP queue to consume (it must exist).")
        parser.add_argument("--queue", required=True, metavar="NAME", help="The nexus queue to store into.")
        parser.add_argument("--prefetch", type=prefetch, default=DEFAULT_PREFETCH,
                            help=f"Deliveries in hand at once, the largest batch (default {DEFAULT_PREFETCH}).")

    def handle(self, *args: Any, **options: Any) -> None:
        logs.install(options["verbosity"])
        quiet_pika(options["verbosity"])
        try:
            message_class = registry.get(options["queue"])
            consumer = Consumer(source=options["source"], message_class=message_class, prefetch=options["prefetch"])
        except (NotRegistered, InvalidMode) as exc:
            raise CommandError(str(exc)) from exc
        try:
            self.run_loop(consumer)
        except SourceNotFound as exc:
            raise CommandError(str(exc)) from exc
