"""``manage.py nexus_rabbitmq_setup``: the delay infrastructure in the broker, and endpoint queues bound to it."""

from __future__ import annotations

import argparse
from typing import Any

import pika
from django.core.management.base import BaseCommand, CommandError

from nexus_queues.contrib.rabbitmq.conf import settings
from nexus_queues.contrib.rabbitmq.connections import BROKER_ERRORS, connect
from nexus_queues.contrib.rabbitmq.delays import (
    LEVELS,
    InvalidDestination,
    TopologyConflict,
    bind_endpoint,
    check_destination,
    declare_delay_infrastructure,
    delivery_exchange,
    level_exchange,
)


def broker_url(text: str) -> str:
    """An AMQP URL, for argparse."""
    if text.partition("://")[0] not in ("amqp", "amqps"):
        raise argparse.ArgumentTypeError("must start amqp:// or amqps://, as amqp://guest:guest@localhost/%2F")
    try:
        pika.URLParameters(text)
    except (ValueError, IndexError) as exc:
        raise argparse.ArgumentTypeError(f"is not an AMQP URL: {exc}") from None
    return text


def endpoint(text: str) -> str:
    """An endpoint's queue name, for argparse."""
    try:
        check_destination(text)
    except InvalidDestination as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


class Command(BaseCommand):
    help = (
        "Declare the delay infrastructure (28 delay levels and the delivery exchange) in RabbitMQ, and bind "
        "endpoint queues to it. Safe to run again, and from several machines at once."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--endpoint",
            type=endpoint,
            action="append",
            default=[],
            metavar="NAME",
            help="A queue to declare (durable) and bind to the delivery exchange with #.NAME; repeat for more.",
        )
        parser.add_argument("--url", type=broker_url, help="The broker's AMQP URL (default: NEXUS_RABBITMQ['URL']).")
        parser.add_argument("--prefix", help="The names' prefix (default: NEXUS_RABBITMQ['DELAY_PREFIX']).")

    def handle(self, *args: Any, **options: Any) -> None:
        url, prefix = options["url"] or settings.URL, options["prefix"] or settings.DELAY_PREFIX
        self.verbosity: int = options["verbosity"]
        try:
            _set_up(url, prefix, options["endpoint"])
        except TopologyConflict as exc:
            raise CommandError(str(exc)) from exc
        except BROKER_ERRORS as exc:
            raise CommandError(f"Could not set up the broker at {_where(url)}: {str(exc) or repr(exc)}") from exc
        self._declared(prefix)
        for name in options["endpoint"]:
            self._say(f"Bound queue {name} to {delivery_exchange(prefix)} with #.{name}.")

    def _declared(self, prefix: str) -> None:
        self._say(
            f"Declared the delay infrastructure: {LEVELS} levels {level_exchange(LEVELS - 1, prefix)} to "
            f"{level_exchange(0, prefix)} and the delivery exchange {delivery_exchange(prefix)}."
        )
        for level in reversed(range(LEVELS)) if self.verbosity >= 2 else ():
            self.stdout.write(f"  {level_exchange(level, prefix)}: waits {2**level:,} s")

    def _say(self, text: str) -> None:
        if self.verbosity >= 1:
            self.stdout.write(text)


def _set_up(url: str, prefix: str, endpoints: list[str]) -> None:
    with connect(url) as connection:
        channel = connection.channel()
        declare_delay_infrastructure(channel, prefix)
        for name in endpoints:
            bind_endpoint(channel, name, prefix)


def _where(url: str) -> str:
    # Never the password: the message ends up in logs.
    parameters = pika.URLParameters(url)
    return f"{parameters.host}:{parameters.port} (vhost {parameters.virtual_host!r})"
