"""Routing keys of the delay levels, the delays and destinations they refuse, where a message starts, and
delayed messages through the real broker."""

from __future__ import annotations

import time
from datetime import timedelta

import pika
import pytest

from nexus_queues.contrib.rabbitmq.delays import (
    MAX_DELAY,
    MAX_DESTINATION_BYTES,
    InvalidDelay,
    InvalidDestination,
    bind_endpoint,
    declare_delay_infrastructure,
    delay_seconds,
    first_exchange,
    publish,
    routing_key,
)
from tests.commands import PATIENCE
from tests.contrib.rabbitmq.conftest import Broker

ZEROS = "0." * 28


def test_routing_key__the_references_ten_seconds() -> None:
    """A delay of 10 s (1010 in binary) sets the bits of 8 and 2 seconds, then names the destination."""
    assert routing_key(10, "destination") == "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.1.0.destination"


def test_routing_key__zero() -> None:
    """No delay is 28 zero bits."""
    assert routing_key(0, "destination") == ZEROS + "destination"


def test_routing_key__one_second() -> None:
    """One second sets only the last bit, level 0's."""
    assert routing_key(1, "destination") == "0." * 27 + "1.destination"


def test_routing_key__the_largest_delay() -> None:
    """268,435,455 s sets all 28 bits."""
    assert routing_key(MAX_DELAY, "destination") == "1." * 28 + "destination"


def test_routing_key__fractions_round_up() -> None:
    """1.2 s waits 2 s, 0.001 s waits 1 s: a delayed message never arrives early."""
    assert routing_key(1.2, "d") == routing_key(2, "d")
    assert routing_key(0.001, "d") == routing_key(1, "d")


def test_routing_key__timedelta_microseconds_round_up() -> None:
    """A timedelta counts in whole seconds too, one microsecond over a second making it the next."""
    assert routing_key(timedelta(seconds=10), "d") == routing_key(10, "d")
    assert routing_key(timedelta(seconds=2, microseconds=1), "d") == routing_key(3, "d")
    assert routing_key(timedelta(days=1), "d") == routing_key(86_400, "d")


def test_routing_key__past_the_largest_delay() -> None:
    """One second more than 28 bits hold is refused, naming the limit."""
    with pytest.raises(InvalidDelay, match="268,435,455"):
        routing_key(MAX_DELAY + 1, "destination")


@pytest.mark.parametrize(
    ("delay", "says"),
    [
        (MAX_DELAY + 0.5, "longer than the delay levels hold"),
        (timedelta(seconds=MAX_DELAY, microseconds=1), "longer than the delay levels hold"),
        (float("inf"), "longer than the delay levels hold"),
        (-1, "cannot be negative"),
        (-0.5, "cannot be negative"),
        (timedelta(microseconds=-1), "cannot be negative"),
        (float("-inf"), "cannot be negative"),
        (float("nan"), "NaN"),
        (True, "not True"),
        ("3", "not '3'"),
        (None, "not None"),
    ],
)
def test_delay_seconds__refused(delay: object, says: str) -> None:
    """Delays that are negative, too long, not a number, or not a number of seconds are refused, saying why."""
    with pytest.raises(InvalidDelay, match=says):
        delay_seconds(delay)  # type: ignore[arg-type]


def test_delay_seconds__a_value_error() -> None:
    """InvalidDelay is also a ValueError, for callers that catch those."""
    with pytest.raises(ValueError, match="negative"):
        delay_seconds(-1)


@pytest.mark.parametrize(
    ("destination", "says"),
    [
        ("", "not ''"),
        (None, "not None"),
        (b"bytes", "not b'bytes'"),
        ("orders.*", "wildcards"),
        ("#", "wildcards"),
        ("x" * (MAX_DESTINATION_BYTES + 1), f"longer than {MAX_DESTINATION_BYTES} bytes"),
        ("é" * (MAX_DESTINATION_BYTES // 2 + 1), f"longer than {MAX_DESTINATION_BYTES} bytes"),
    ],
)
def test_routing_key__bad_destination(destination: object, says: str) -> None:
    """A destination that is no name, holds a wildcard, or leaves the routing key over 255 bytes is refused."""
    with pytest.raises(InvalidDestination, match=says):
        routing_key(1, destination)  # type: ignore[arg-type]


def test_routing_key__the_longest_destination() -> None:
    """A destination of exactly the bytes left makes a routing key of 255 bytes, the most AMQP carries."""
    assert len(routing_key(MAX_DELAY, "x" * MAX_DESTINATION_BYTES).encode()) == 255


@pytest.mark.parametrize(
    ("delay", "exchange"),
    [
        (0, "p.delay-delivery"),
        (0.0, "p.delay-delivery"),
        (1, "p.delay-level-00"),
        (0.2, "p.delay-level-00"),
        (2, "p.delay-level-01"),
        (3, "p.delay-level-01"),
        (10, "p.delay-level-03"),
        (timedelta(minutes=1), "p.delay-level-05"),
        (MAX_DELAY, "p.delay-level-27"),
    ],
)
def test_first_exchange__the_level_of_the_highest_bit(delay: float | timedelta, exchange: str) -> None:
    """A message starts at the level of its delay's highest 1 bit (10 s at level 3), no delay at delivery."""
    assert first_exchange(delay, "p") == exchange


def test_first_exchange__the_prefix_setting(settings: object) -> None:
    """Without a prefix, names follow the DELAY_PREFIX setting."""
    settings.NEXUS_RABBITMQ = {"DELAY_PREFIX": "nsb.v2"}  # type: ignore[attr-defined]
    assert first_exchange(10) == "nsb.v2.delay-level-03"
    assert first_exchange(0) == "nsb.v2.delay-delivery"


def test_publish__refuses_a_delayed_message_expiration() -> None:
    """A delayed message's own expiration would dead-letter it out of a level early: refused before publishing."""
    with pytest.raises(InvalidDelay, match="expiration"):
        publish(None, b"x", "d", delay=5, properties=pika.BasicProperties(expiration="100"))  # type: ignore[arg-type]


def test_publish__expiration_without_delay(broker: Broker) -> None:
    """With no delay the message skips the levels, so its own expiration is kept."""
    declare_delay_infrastructure(broker.channel)
    endpoint = broker.name("arrivals")
    bind_endpoint(broker.channel, endpoint)
    publish(broker.channel, b"x", endpoint, properties=pika.BasicProperties(expiration="60000"))
    _, received, _ = broker.channel.basic_get(endpoint, auto_ack=True)
    assert received is not None and received.expiration == "60000"


def test_publish__each_delay_arrives_in_its_second(broker: Broker) -> None:
    """Messages published together with delays of 0, 1, 2, 3, 5 and 1.2 s (which waits 2 s) each arrive no
    earlier than their whole seconds and within 1 s after them."""
    declare_delay_infrastructure(broker.channel)
    endpoint = broker.name("arrivals")
    bind_endpoint(broker.channel, endpoint)
    delays = {"0": 0, "1": 1, "2": 2, "3": 3, "5": 5, "1.2": 2}
    arrived: dict[str, float] = {}
    consumer = broker.connection.channel()
    consumer.basic_consume(
        endpoint, lambda _ch, _method, _props, body: arrived.setdefault(body.decode(), time.monotonic()), auto_ack=True
    )
    sent = time.monotonic()
    for text in delays:
        publish(broker.channel, text, endpoint, delay=float(text))
    deadline = sent + PATIENCE
    while len(arrived) < len(delays) and time.monotonic() < deadline:
        broker.connection.process_data_events(time_limit=0.05)
    waited = {text: round(at - sent, 3) for text, at in arrived.items()}
    assert waited.keys() == delays.keys(), f"missing: {delays.keys() - waited.keys()}"
    for text, seconds in delays.items():
        assert seconds <= waited[text] <= seconds + 1, f"{text} s took {waited[text]} s: {waited}"


def test_publish__headers_and_persistence(broker: Broker) -> None:
    """A message arrives persistent, with its headers and properties, after passing through the levels."""
    declare_delay_infrastructure(broker.channel)
    endpoint = broker.name("arrivals")
    bind_endpoint(broker.channel, endpoint)
    properties = pika.BasicProperties(content_type="application/json", headers={"a": "1", "b": "1"})
    publish(broker.channel, b"{}", endpoint, delay=1, headers={"b": "2"}, properties=properties)
    deadline = time.monotonic() + PATIENCE
    got = None, None, None
    while got[0] is None and time.monotonic() < deadline:
        got = broker.channel.basic_get(endpoint, auto_ack=True)
        broker.connection.sleep(0.05)
    _, received, body = got
    assert body == b"{}"
    assert received is not None and received.delivery_mode == 2
    assert received.content_type == "application/json"
    assert {received.headers["a"], received.headers["b"]} == {"1", "2"}
    assert properties.headers == {"a": "1", "b": "1"}, "the caller's properties are left as they were"


def test_publish__no_delay_to_nobody(broker: Broker) -> None:
    """With no delay, a destination no endpoint binds is refused at once (mandatory, confirmed)."""
    declare_delay_infrastructure(broker.channel)
    with pytest.raises(pika.exceptions.UnroutableError):
        publish(broker.channel, b"x", broker.name("nobody"), delay=0)
