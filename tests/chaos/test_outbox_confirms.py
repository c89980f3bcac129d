"""The outbox when the broker nacks or does not confirm: nothing nacked or unconfirmed is done, each is published
again by a retry, and the only duplicates are those the guide documents (the broker took it, its confirm was lost)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import timedelta

import pika
import pytest

from nexus_queues import Status
from nexus_queues.contrib.rabbitmq.publishing import disconnect
from nexus_queues.worker.lease_renewal import LeaseRenewal
from nexus_queues.worker.runs import run_once
from tests.commands import PATIENCE, wait_until
from tests.contrib.rabbitmq.conftest import Broker, broker, rabbitmq  # noqa: F401  (the broker fixture)
from tests.contrib.rabbitmq.test_publishing import (
    NOT_PUBLISHED,
    order_ids,
    received,
    retry_now,
    ship,
    shipping,  # noqa: F401  (the fixture)
    statuses,
)
from tests.testapp.jobs import ShipmentJob
from tests.testapp.queues import Shipment

from .proxy import Proxy

pytestmark = pytest.mark.django_db(transaction=True)

ORDERS = ("o1", "o2", "o3", "o4", "o5")


@pytest.fixture
def capped(broker: Broker, shipping: str) -> Iterator[str]:  # noqa: F811
    """The destination capped at two messages with ``reject-publish``, so the broker nacks the third on: the
    policy's name (cleared after the test)."""
    name = f"{shipping}-cap"
    pattern = "^" + shipping.replace(".", r"\.") + "$"
    definition = json.dumps({"max-length": 2, "overflow": "reject-publish"})
    _rabbitmqctl("set_policy", "--apply-to", "queues", name, pattern, definition)
    for body in (b"1", b"2"):
        broker.channel.basic_publish("", shipping, body)
    with pytest.raises(pika.exceptions.NackError):
        broker.channel.basic_publish("", shipping, b"3")
    broker.channel.queue_purge(shipping)
    yield name
    _rabbitmqctl("clear_policy", name, check=False)


def test_publish_job__nacked_messages_stay_and_are_published_once_by_a_retry(broker, shipping, capped):  # noqa: F811
    """Five messages to a queue that takes two: two are confirmed and done, three are nacked and stay with the
    reason; once the cap is lifted a retry publishes those three. Each message arrives exactly once."""
    ship(*ORDERS)
    assert run_once(ShipmentJob, LeaseRenewal()) == 5
    left = list(Shipment.queue_items())
    assert len(left) == 3
    assert {(row.status, row.error_type) for row in left} == {(Status.SLEEPING, NOT_PUBLISHED)}
    assert left[0].error_message.startswith(f"The broker refused the message for destination {shipping!r} (nack)")
    first = received(broker, shipping, 2)
    assert not set(order_ids(first)) & {row.message_id for row in left}
    _rabbitmqctl("clear_policy", capped)
    retry_now()
    assert run_once(ShipmentJob, LeaseRenewal()) == 3
    assert statuses() == {}
    assert sorted(order_ids(first) + order_ids(received(broker, shipping, 3))) == list(ORDERS)


def test_publish_job__nacked_until_the_last_attempt_is_error(broker, shipping, capped):  # noqa: F811
    """A message the broker nacks on every attempt ends in Error with the reason, still stored, never done."""
    broker.channel.basic_publish("", shipping, b"1")
    broker.channel.basic_publish("", shipping, b"2")
    ship("o1")
    for _attempt in range(ShipmentJob.max_attempts):
        retry_now()
        assert run_once(ShipmentJob, LeaseRenewal()) == 1
    row = Shipment.queue_items().get()
    assert (row.status, row.attempts, row.error_type) == (Status.ERROR, ShipmentJob.max_attempts, NOT_PUBLISHED)
    assert "(nack)" in row.error_message


@pytest.fixture
def held_back(broker: Broker, settings: object) -> Iterator[Proxy]:  # noqa: F811
    """The outbox's broker behind a proxy, its confirm timeout one second."""
    address = pika.URLParameters(broker.url)
    with Proxy((address.host, address.port)) as proxy:
        settings.NEXUS_RABBITMQ = {  # type: ignore[attr-defined]
            **broker.settings(), "URL": f"amqp://guest:guest@127.0.0.1:{proxy.port}/%2F",
            "CONFIRM_TIMEOUT": timedelta(seconds=1),
        }
        try:
            yield proxy
        finally:
            disconnect()


class HeldBack(ShipmentJob, abstract=True):
    """Has the proxy hold the broker's answers back from its first message on: confirms never come."""

    proxy: Proxy

    def delay_for(self, message: object) -> timedelta:
        self.proxy.hold()
        return super().delay_for(message)  # type: ignore[arg-type]


def test_publish_job__unconfirmed_in_time_stay_and_are_published_again(broker, shipping, held_back):  # noqa: F811
    """The broker takes the messages but its confirms do not come within CONFIRM_TIMEOUT: none is done, each
    stays with a reason naming the timeout, and the connection is closed. A retry publishes each again, so each
    arrives twice: the documented duplicate of a lost confirm, never a lost message."""
    HeldBack.proxy = held_back
    ship(*ORDERS)
    assert run_once(HeldBack, LeaseRenewal()) == 5
    rows = list(Shipment.queue_items())
    assert {(row.status, row.error_type) for row in rows} == {(Status.SLEEPING, NOT_PUBLISHED)}
    assert len(rows) == 5
    assert "no confirm within 1 s" in rows[0].error_message
    wait_until(lambda: held_back.open_connections() == 0, "the unanswered connection closed")
    held_back.release()
    retry_now()
    assert run_once(ShipmentJob, LeaseRenewal()) == 5
    assert statuses() == {}
    assert order_ids(received(broker, shipping, 10)) == sorted(ORDERS * 2)


def _rabbitmqctl(*args: str, check: bool = True) -> None:
    done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 0 or not check, done.stderr
