"""The metrics page shows each queue's limits in force, their use, and the Pending messages that wait on them."""

import pytest
from django.test import Client

from nexus_queues import enqueue_many, lease
from nexus_queues.api_tokens import make_token
from tests.api_client import make_user
from tests.contrib.prometheus.scraping import scrape
from tests.testapp.more_queues import Beat, Errand, Visit

pytestmark = pytest.mark.django_db


def test_metrics__limits_in_force_and_what_waits(settings):
    """Concurrency and rate limits with their keys, what they count now, and the messages held back."""
    enqueue_many([Errand(n=n) for n in range(3)])
    enqueue_many([Beat(n=n) for n in range(11)])
    lease(Errand, 10)
    lease(Beat, 20)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {make_token(make_user('prometheus', superuser=True))}"}
    scraped = scrape(Client(), **bearer)
    assert scraped("nexus_queues_concurrency_limit", queue="errands", key="") == 2
    assert scraped("nexus_queues_concurrency_limit", queue="visits", key="customer") == 1
    assert scraped("nexus_queues_limit_leased", queue="errands") == 2
    assert scraped("nexus_queues_limit_waiting_messages", queue="errands") == 1
    assert scraped("nexus_queues_rate_limit_starts", queue="beats", key="") == 10
    assert scraped("nexus_queues_rate_limit_period_seconds", queue="beats") == 1
    assert scraped("nexus_queues_limit_started", queue="beats") == 10
    assert scraped("nexus_queues_limit_waiting_messages", queue="beats") == 1
    assert scraped("nexus_queues_limit_waiting_messages", queue="greetings") is None
    assert Visit.queue_options.limits.concurrency_key == "customer"
