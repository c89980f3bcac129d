"""PostgreSQL: the hot statements are prepared once per connection, and only they are."""

import pytest
from django.db import connection

from nexus_queues import enqueue, lease, mark_processed
from tests.factories import GreetingFactory
from tests.testapp.queues import Greeting

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engines("postgresql")]


def prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def enqueue_lease_complete() -> None:
    for _ in range(3):
        enqueue(GreetingFactory())
        mark_processed(lease(Greeting, 10))


def test_prepared__hot_statements_once_each():
    """Three rounds of enqueue, lease and acknowledge prepare each statement once; the ORM's are not."""
    connection.close()  # a fresh connection: nothing prepared yet
    Greeting.queue_model.objects.count()
    enqueue_lease_complete()
    statements = prepared()
    table = Greeting.queue_model._meta.db_table
    assert len([s for s in statements if f'INSERT INTO "{table}"' in s]) == 1
    assert len([s for s in statements if f'UPDATE "{table}"' in s and "SKIP LOCKED" in s]) == 1
    assert len([s for s in statements if f'DELETE FROM "{table}"' in s]) == 1
    assert not [s for s in statements if "COUNT(*)" in s]  # Django's own query
    assert Greeting.queue_model.objects.count() == 0


def test_prepared__off(settings):
    """``PREPARED_STATEMENTS = False`` (behind a transaction-pooling proxy) prepares nothing."""
    settings.NEXUS_QUEUES = {"PREPARED_STATEMENTS": False}
    connection.close()
    enqueue_lease_complete()
    assert prepared() == []
    assert Greeting.queue_model.objects.count() == 0
