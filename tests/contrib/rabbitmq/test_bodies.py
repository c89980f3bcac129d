"""Bodies of deliveries as messages of the queue's class, or the reasons they are not."""

from __future__ import annotations

import pika
import pytest

from nexus_queues.contrib.rabbitmq.bodies import Delivery, sort_deliveries
from tests.testapp.queues import Arrival


def delivery(tag: int, body: bytes) -> Delivery:
    return Delivery(tag, body, pika.BasicProperties(), "", "in")


@pytest.mark.django_db  # the size a body may take is its database's
def test_sort_deliveries__valid_and_invalid_apart():
    """Each body on its own: valid ones become messages, the others carry the reason, order kept."""
    deliveries = [
        delivery(1, b'{"arrival_id": "a", "n": 1}'),
        delivery(2, b"\xff not json"),
        delivery(3, b'{"arrival_id": "b", "n": "many"}'),
        delivery(4, b'{"arrival_id": "a\\u0000", "n": 4}'),
        delivery(5, b'{"arrival_id": "c", "n": 5}'),
    ]
    valid, invalid = sort_deliveries(deliveries, Arrival)
    assert [(d.tag, m) for d, m in valid] == [(1, Arrival(arrival_id="a", n=1)), (5, Arrival(arrival_id="c", n=5))]
    reasons = {d.tag: reason for d, reason in invalid}
    assert list(reasons) == [2, 3, 4]
    assert "Invalid JSON" in reasons[2]
    assert reasons[3].startswith("n: Input should be a valid integer")
    assert "Arrival.message_id" in reasons[4] and "NUL" in reasons[4]
