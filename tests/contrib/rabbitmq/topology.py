"""The delay infrastructure as the reference draws it, and as the broker reports it (``rabbitmqctl``)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from tests.commands import PATIENCE

LEVELS = 28
"""The reference's count, written out here rather than read from the code under test."""


@dataclass(frozen=True)
class Topology:
    """Exchanges (name, type, durable), queues (name, durable, arguments) and bindings, sorted."""

    exchanges: list[tuple[str, str, bool]]
    queues: list[tuple[str, bool, dict[str, object]]]
    bindings: list[tuple[str, str, str, str, str]]


def drawn(prefix: str, endpoints: tuple[str, ...] = ()) -> Topology:
    """The reference's drawing under ``prefix``: level n's queue waits 2^n s, then goes to level n - 1.

    The queues' arguments are those NServiceBus.RabbitMQ 8 and later give its ``nsb.v2`` levels.
    """
    exchanges, queues, bindings = [(f"{prefix}.delay-delivery", "topic", True)], [], []
    for n in range(LEVELS):
        name = f"{prefix}.delay-level-{n:02d}"
        below = f"{prefix}.delay-level-{n - 1:02d}" if n else f"{prefix}.delay-delivery"
        wildcards = "*." * (LEVELS - 1 - n)
        exchanges.append((name, "topic", True))
        arguments = {
            "x-queue-type": "quorum",
            "x-dead-letter-strategy": "at-least-once",
            "x-overflow": "reject-publish",
            "x-message-ttl": 2**n * 1000,
            "x-dead-letter-exchange": below,
        }
        queues.append((name, True, arguments))
        bindings.append((name, "exchange", name, "queue", f"{wildcards}1.#"))
        bindings.append((name, "exchange", below, "exchange", f"{wildcards}0.#"))
    for endpoint in endpoints:
        queues.append((endpoint, True, {}))
        bindings.append((f"{prefix}.delay-delivery", "exchange", endpoint, "queue", f"#.{endpoint}"))
    return Topology(sorted(exchanges), sorted(queues, key=str), sorted(bindings))


def read_back(prefix: str) -> Topology:
    """What the broker holds under ``prefix``: one ``rabbitmqctl`` call per kind (each takes about a second)."""
    mine = f"{prefix}."
    exchanges = [
        (e["name"], e["type"], e["durable"])
        for e in _rabbitmqctl("list_exchanges", "name", "type", "durable")
        if e["name"].startswith(mine)
    ]
    queues = [
        (q["name"], q["durable"], {key: value for key, _type, value in q["arguments"]})
        for q in _rabbitmqctl("list_queues", "name", "durable", "arguments")
        if q["name"].startswith(mine)
    ]
    fields = ("source_name", "source_kind", "destination_name", "destination_kind", "routing_key")
    bindings = [
        tuple(b[f] for f in fields)
        for b in _rabbitmqctl("list_bindings", *fields)
        # The default exchange's implicit binding of every queue is not part of the drawing.
        if b["source_name"].startswith(mine)
    ]
    return Topology(sorted(exchanges), sorted(queues, key=str), sorted(bindings))  # type: ignore[arg-type]


def _rabbitmqctl(*args: str) -> list[dict[str, object]]:
    done = subprocess.run(
        ["rabbitmqctl", "-q", *args, "--formatter", "json"], capture_output=True, text=True, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]
