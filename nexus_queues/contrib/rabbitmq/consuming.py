"""The consumer: an AMQP queue into a nexus queue, each batch validated, committed, and only then acknowledged.

A crash between the commit and the acknowledgement makes the broker deliver the batch again. A queue with
identity (``QueueMessageWithId``) then replaces or, idempotent, discards; a queue without stores it twice.
What was stored is acknowledged before any invalid body is dead-lettered, so a dead-letter that fails never
brings a stored body back (see :mod:`.held`). While it runs, the consumer is among the live workers (kind
``consumer``, serving the queue it stores into), its row saying how many invalid bodies it holds and why.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Sequence
from datetime import timedelta

import pika
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection

from nexus_queues.conf import settings as nexus_settings
from nexus_queues.connections import DATABASE_ERRORS, reset_connections
from nexus_queues.enqueueing import EnqueueResult, enqueue_many
from nexus_queues.exceptions import SourceNotFound
from nexus_queues.health import QueueHealth
from nexus_queues.messages import QueueMessage
from nexus_queues.processes import Condition, ProcessKind
from nexus_queues.status import HealthStatus
from nexus_queues.worker.breaker import CircuitBreaker
from nexus_queues.worker.presence import Presence

from .bodies import Delivery, sort_deliveries
from .conf import settings
from .connections import BROKER_ERRORS, confirmed_channel, connect, queue_exists
from .held import REFUSALS, Held, frames
from .invalid import DEAD_LETTER, check_mode, dead_letter, declare_invalid_queue, invalid_queue, reject
from .outages import Outage

logger = logging.getLogger("nexus_queues.rabbitmq")

DEFAULT_PREFETCH = 100
"""Deliveries the broker sends ahead of acknowledgements, and so the largest batch."""

POLL = 0.5
"""Seconds a step waits for a first delivery: how soon an idle consumer notices it was asked to stop."""

IDLE = 0.05
"""Seconds without a new delivery that end a batch before it is full."""

class Consumer:
    """Consumes the AMQP queue ``source`` into the nexus queue of ``message_class`` until stopped."""

    def __init__(
        self,
        *,
        source: str,
        message_class: type[QueueMessage],
        prefetch: int = DEFAULT_PREFETCH,
        url: str | None = None,
        invalid_messages: str | None = None,
        max_backoff: timedelta | None = None,
        poll: float = POLL,
        idle: float = IDLE,
    ) -> None:
        self.source = source
        self.message_class = message_class
        self.prefetch = prefetch
        self.url = url
        self.invalid_messages = check_mode(invalid_messages or settings.INVALID_MESSAGES)
        self.poll, self.idle = poll, idle
        where = f"{socket.gethostname()}:{os.getpid()}"
        self.name = f"nexus_rabbitmq_consume {source} -> {message_class.queue_name()} on {where}"
        """The connection's name in the broker's list, so that an operator can tell consumers apart."""
        self.broker = Outage("The broker", max_backoff or settings.MAX_BACKOFF)
        self.held = Held(invalid_queue(source), max_backoff or settings.MAX_BACKOFF)
        """Invalid bodies that ``<from>.invalid`` refused, unacknowledged."""
        self.database = CircuitBreaker(
            "The consumer's database", nexus_settings.WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER,
            nexus_settings.WORKER_MAX_BACKOFF,
        )
        self._stopping = threading.Event()
        self.presence = Presence(
            kind=ProcessKind.CONSUMER, queues=[message_class.queue_name()], concurrency=prefetch,
            activity=self.activity, condition=self.condition,
        )
        """Its row among the live workers, written by a background thread while :meth:`run` runs."""
        self._connection: BlockingConnection | None = None
        self._channel: BlockingChannel | None = None
        self._publisher: BlockingChannel | None = None
        self._received: list[Delivery] = []

    def stop(self) -> None:
        """Stop once the batch in hand is stored and acknowledged."""
        self._stopping.set()

    def run(self) -> None:
        """Consume until :meth:`stop`; :class:`SourceNotFound` when the broker says the source queue does not exist."""
        logger.info("Consumer started: %s -> %s.", self.source, self.message_class.queue_name(),
                    extra={"action": "started"})
        self.presence.start()
        try:
            while not self._stopping.is_set():
                pause = self.step()
                if pause:
                    self._stopping.wait(pause)
        finally:
            self.disconnect()
            reset_connections()
            self.presence.stop()
        logger.info("Consumer stopped.", extra={"action": "stopped"})

    def step(self) -> float:
        """Connect if needed and consume one batch; the seconds to pause before the next step (0: none)."""
        try:
            self.connect()
            self.offer_held()
            deliveries = self.fetch()
        except BROKER_ERRORS as exc:
            self.disconnect()
            return self.broker.failure(exc)
        self.broker.success()
        if not deliveries:
            return 0
        try:
            self.handle(deliveries)
        except DATABASE_ERRORS as exc:
            reset_connections()
            self.give_back(deliveries)
            return self.database.failure(exc)
        except BROKER_ERRORS as exc:
            self.disconnect()
            return self.broker.failure(exc)
        self.database.success()
        return 0

    def connect(self) -> None:
        """Open the connection and channels, check the source exists, and start consuming; nothing if open."""
        if self._connection is not None and self._connection.is_open:
            return
        self.disconnect()
        self._connection = connect(self.url, name=self.name)
        self._channel = self._connection.channel()
        if not queue_exists(self._connection, self.source):
            raise SourceNotFound(
                f"The AMQP queue {self.source!r} does not exist on the broker: declare it (or bind it) first."
            )
        if self.invalid_messages == DEAD_LETTER:
            self._open_publisher()
        self._channel.basic_qos(prefetch_count=self.prefetch)
        self._channel.basic_consume(self.source, self._on_delivery)

    def disconnect(self) -> None:
        """Close the connection, if any; what it held unacknowledged goes back to the source queue."""
        connection, self._connection, self._channel, self._publisher = self._connection, None, None, None
        self._received = []
        self.held.forget()
        if connection is not None and connection.is_open:
            try:
                connection.close()
            except BROKER_ERRORS:
                pass

    def fetch(self) -> list[Delivery]:
        """The next batch: waits up to ``poll`` seconds for a delivery, then takes more until ``prefetch``
        are in hand or none came for ``idle`` seconds."""
        assert self._connection is not None
        if not self._received:
            self._connection.process_data_events(time_limit=self.poll)
        while self._received and len(self._received) < self.prefetch:
            before = len(self._received)
            self._connection.process_data_events(time_limit=self.idle)
            if len(self._received) == before:
                break
        batch, self._received = self._received, []
        return batch

    def handle(self, deliveries: Sequence[Delivery]) -> EnqueueResult:
        """Store the valid bodies (one transaction) and acknowledge them, then dead-letter or reject the others."""
        assert self._channel is not None
        valid, refused = sort_deliveries(deliveries, self.message_class)
        result = enqueue_many([message for _, message in valid])
        kept = {delivery.tag for delivery, _ in refused} | set(self.held.bodies)
        for tag, multiple in frames([delivery.tag for delivery, _ in valid], kept):
            self._channel.basic_ack(tag, multiple=multiple)
        for delivery, reason in refused:
            self._refuse(delivery, reason)
        logger.info(
            "%s -> %s: %s received, %s stored, %s discarded, %s invalid.", self.source,
            self.message_class.queue_name(), len(deliveries), len(result.stored),
            len(result.discarded) + len(result.superseded), len(refused), extra={"action": "batch_stored"},
        )
        return result

    def give_back(self, deliveries: Sequence[Delivery]) -> None:
        """Return ``deliveries`` to the source queue, unacknowledged, for a later try."""
        assert self._channel is not None
        try:
            for tag, multiple in frames([delivery.tag for delivery in deliveries], set(self.held.bodies)):
                self._channel.basic_nack(tag, multiple=multiple, requeue=True)
        except BROKER_ERRORS:
            self.disconnect()  # the broker requeues what a closed connection held

    def offer_held(self) -> None:
        """Offer the held bodies to ``<from>.invalid`` again (declared again, in case it was deleted), when due."""
        if not self.held.due():
            return
        try:
            self._open_publisher()
        except REFUSALS as exc:
            self.held.refused(exc)
            return
        for delivery, reason in list(self.held.bodies.values()):
            if not self._dead_letter(delivery, reason):
                return
            self.held.taken(delivery.tag)

    def health(self) -> QueueHealth:
        """The consumer's health: degraded while invalid bodies are held, unhealthy once they stop consumption."""
        return self.held.health(self.prefetch)

    def activity(self) -> str:
        """What the consumer is doing, for its row among the live workers."""
        if self._stopping.is_set():
            return "stopping"
        return "waiting for broker" if self.broker.failures else "consuming"

    def condition(self) -> Condition:
        """Its health for its row among the live workers: the invalid bodies held, and why."""
        health = self.health()
        reason = "" if health.status == HealthStatus.HEALTHY else health.summary
        return Condition(health.status.value, reason, len(self.held.bodies))

    def _refuse(self, delivery: Delivery, reason: str) -> None:
        assert self._channel is not None
        if self.invalid_messages == DEAD_LETTER:
            if not self._dead_letter(delivery, reason):
                return
            then = f"dead-lettered to {invalid_queue(self.source)}"
        else:
            reject(self._channel, delivery)
            then = "rejected"
        logger.warning(
            "Invalid body from %s (message_id %s): %s; %s.", self.source, delivery.properties.message_id, reason,
            then, extra={"action": "invalid_body"},
        )

    def _dead_letter(self, delivery: Delivery, reason: str) -> bool:
        """Publish ``delivery`` to ``<from>.invalid`` and acknowledge it; hold it when the queue refuses it."""
        assert self._channel is not None
        try:
            if self._publisher is None or not self._publisher.is_open:
                self._open_publisher()
            assert self._publisher is not None
            dead_letter(self._publisher, delivery, reason, self.source, self.message_class.queue_name())
        except REFUSALS as exc:
            if delivery.tag in self.held.bodies:
                self.held.refused(exc)
            else:
                self.held.hold(delivery, reason, exc)
            return False
        self._channel.basic_ack(delivery.tag)
        return True

    def _open_publisher(self) -> None:
        """A confirmed channel for dead-letters, ``<from>.invalid`` declared on it (again, if it was deleted)."""
        assert self._connection is not None
        if self._publisher is None or not self._publisher.is_open:
            self._publisher = confirmed_channel(self._connection)
        declare_invalid_queue(self._publisher, self.source)

    def _on_delivery(
        self, channel: BlockingChannel, method: pika.spec.Basic.Deliver, properties: pika.BasicProperties, body: bytes
    ) -> None:
        self._received.append(Delivery(
            method.delivery_tag, body, properties, method.exchange, method.routing_key, bool(method.redelivered)
        ))
