"""Publishing a batch with its confirms awaited together, on pika's asynchronous connection.

pika's blocking channel waits for each confirm before it sends the next message; the broker
confirms a persistent message once it is on disk, so every message would pay that wait. Here a
batch is sent whole, then the loop runs until every message is confirmed, returned or nacked, the
connection is lost, or the time is up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pika
from pika.adapters.select_connection import SelectConnection
from pika.channel import Channel
from pika.spec import Basic

from .conf import settings
from .connections import NOT_FOUND, parameters

Send = Callable[[Channel], None]
"""Publishes one message on the channel it is given (raises before sending when the message is refused)."""


class Lost(pika.exceptions.AMQPError):
    """The connection or channel closed, or the broker did not answer in time."""


class Unconfirmed(Lost):
    """The broker did not confirm in time; it may have taken the message all the same."""


class Pipeline:
    """A connection in confirm mode whose batches are confirmed together; one per thread (pika is not thread-safe)."""

    def __init__(self, url: str, name: str) -> None:
        self.url = url
        self.failure: BaseException | None = None
        self.channel: Channel | None = None
        self._next_tag = 1
        self._pending: dict[int, Any] = {}
        self._returned: set[str | None] = set()
        self._outcomes: dict[Any, bool] = {}
        self._running = False
        self._past_failures = False
        self.connection = SelectConnection(
            parameters(url, name), on_open_callback=self._opened, on_open_error_callback=self._lost,
            on_close_callback=self._lost,
        )
        self._run(lambda: self.channel is not None)
        if self.channel is None:
            self.close()
            raise self.failure or Lost("The broker did not open a channel in time.")

    @property
    def usable(self) -> bool:
        """Open, with its channel, after taking in whatever the broker sent while it was idle."""
        if self.failure is None and self.connection.is_open:
            self._run(lambda: True)
        return self.failure is None and self.channel is not None and self.channel.is_open

    def publish(self, messages: Iterable[tuple[Any, str | None, Send]]) -> dict[Any, BaseException | None]:
        """Send every ``(key, message_id, send)``, then wait for the confirms; per key: None when confirmed,
        ``UnroutableError`` when returned, ``NackError`` when refused, :class:`Lost` when unanswered.

        A ``send`` that raises before sending gives its exception. ``message_id`` names a returned message.
        """
        results: dict[Any, BaseException | None] = {}
        ids: dict[str | None, Any] = {}
        self._outcomes = {}
        self._returned = set()
        for key, message_id, send in messages:
            if self.failure is not None:
                results[key] = self.failure
                continue
            assert self.channel is not None
            try:
                send(self.channel)
            except pika.exceptions.AMQPError as exc:
                self.failure = exc
                results[key] = exc
                continue
            except Exception as exc:
                results[key] = exc
                continue
            self._pending[self._next_tag] = key
            self._next_tag += 1
            ids[message_id] = key
        self._run(lambda: not self._pending)
        if self._pending:  # unanswered: this connection cannot be trusted with another batch
            self.failure = self.failure or Unconfirmed(f"No confirm within {_timeout():g} s")
            self._pending = {}
        returned = {ids[message_id] for message_id in self._returned if message_id in ids}
        for key in ids.values():
            if key in returned:
                results[key] = pika.exceptions.UnroutableError([])
            elif key in self._outcomes:
                results[key] = None if self._outcomes[key] else pika.exceptions.NackError([])
            else:
                results[key] = self.failure
        return results

    def queue_exists(self, queue: str) -> bool:
        """Does ``queue`` exist? Asked on a channel of its own: the broker closes the channel that asks in vain."""
        answer: list[bool] = []

        def closed(_: Channel, exc: BaseException) -> None:
            if _not_found(exc):
                answer.append(False)
                self._check()

        def opened(channel: Channel) -> None:
            def declared(_: Any) -> None:
                answer.append(True)
                channel.close()
                self._check()

            channel.add_on_close_callback(closed)
            channel.queue_declare(queue, passive=True, callback=declared)

        self.connection.channel(on_open_callback=opened)
        self._run(lambda: bool(answer))
        if not answer:
            raise self.failure or Lost(f"The broker did not say in time whether queue {queue!r} exists.")
        return answer[0]

    def close(self) -> None:
        """Close the connection (waiting for the broker's answer only briefly), then its loop's own sockets."""
        if not (self.connection.is_closed or self.connection.is_closing):
            try:
                self.connection.close()
            except pika.exceptions.AMQPError:
                pass
        self._run(lambda: self.connection.is_closed, timeout=1.0, past_failures=True)
        if not self.connection.is_closed:
            # No answer to the close (a broker that stopped answering, say after a confirm timeout): drop the
            # socket, which pika would otherwise leave open, and with it the broker's side of the connection.
            self.connection._adapter_disconnect_stream()
            self._run(lambda: self.connection.is_closed, timeout=1.0, past_failures=True)
        self.connection.ioloop.close()

    def _run(self, done: Callable[[], bool], timeout: float | None = None, past_failures: bool = False) -> None:
        """Run the connection's loop until ``done()``, a failure (unless ``past_failures``), or ``timeout``
        (default: the ``CONFIRM_TIMEOUT`` setting); at least one pass."""
        timeout = _timeout() if timeout is None else timeout
        ioloop = self.connection.ioloop
        timed_out: list[bool] = []

        def time_up() -> None:
            timed_out.append(True)
            ioloop.stop()

        timer = ioloop.call_later(timeout, time_up)
        first = ioloop.call_later(0, ioloop.stop)
        self._done = done
        self._past_failures = past_failures
        try:
            self._running = True
            ioloop.start()  # one pass: what arrived meanwhile
            while not (done() or (self.failure and not past_failures) or timed_out):
                ioloop.start()
        finally:
            self._running = False
            ioloop.remove_timeout(timer)
            ioloop.remove_timeout(first)

    def _check(self) -> None:
        if self._running and (self._done() or (self.failure is not None and not self._past_failures)):
            self.connection.ioloop.stop()

    def _opened(self, connection: SelectConnection) -> None:
        connection.channel(on_open_callback=self._channel_opened)

    def _channel_opened(self, channel: Channel) -> None:
        channel.add_on_close_callback(self._lost)
        channel.add_on_return_callback(self._on_return)

        def confirming(_: Any) -> None:
            self.channel = channel
            self._check()

        channel.confirm_delivery(ack_nack_callback=self._on_confirm, callback=confirming)

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        last = method.delivery_tag
        tags = [tag for tag in self._pending if tag <= last] if method.multiple else [last]
        for tag in tags:
            key = self._pending.pop(tag, None)
            if key is not None:
                self._outcomes[key] = isinstance(method, Basic.Ack)
        self._check()

    def _on_return(self, channel: Channel, method: Any, properties: pika.BasicProperties, body: bytes) -> None:
        self._returned.add(properties.message_id)

    def _lost(self, _: Any, exc: BaseException | str) -> None:
        self.failure = exc if isinstance(exc, BaseException) else Lost(str(exc))
        self.channel = None
        self._check()


def _timeout() -> float:
    return settings.CONFIRM_TIMEOUT.total_seconds()


def _not_found(exc: BaseException) -> bool:
    return isinstance(exc, pika.exceptions.ChannelClosedByBroker) and exc.reply_code == NOT_FOUND
