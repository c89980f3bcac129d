"""PostgreSQL: a connection keeps its psycopg cursor between the backend's calls, never sharing one in use."""

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from nexus_queues import enqueue, lease, mark_processed
from nexus_queues.backends import backend_for
from tests.factories import GreetingFactory
from tests.testapp.queues import Greeting

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.engines("postgresql")]


def psycopg_cursor() -> object:
    with backend_for("default").cursor() as cursor:
        return cursor.cursor


def test_kept_cursor__one_psycopg_cursor_call_after_call():
    first = psycopg_cursor()
    enqueue(GreetingFactory())
    mark_processed(lease(Greeting, 10))
    assert psycopg_cursor() is first
    assert Greeting.queue_model.objects.count() == 0


def test_kept_cursor__a_call_within_a_call_has_its_own():
    """The inner statement does not replace the outer one's rows."""
    backend = backend_for("default")
    with backend.cursor() as outer:
        outer.execute("SELECT generate_series(1, 3)")
        with backend.cursor() as inner:
            assert inner.cursor is not outer.cursor
            inner.execute("SELECT 42")
            assert inner.fetchall() == [(42,)]
        assert outer.fetchall() == [(1,), (2,), (3,)]


def test_kept_cursor__a_new_connection_gets_a_new_cursor():
    before = psycopg_cursor()
    connection.close()
    enqueue(GreetingFactory())
    after = psycopg_cursor()
    assert after is not before
    assert after.connection is connection.connection
    assert len(lease(Greeting, 10)) == 1


def test_kept_cursor__works_after_a_failed_statement():
    backend = backend_for("default")
    with pytest.raises(DatabaseError), backend.cursor() as cursor:
        cursor.execute("SELECT 1 / 0")
    message = GreetingFactory()
    enqueue(message)
    assert [item.message for item in lease(Greeting, 10)] == [message]


def test_kept_cursor__statements_stay_in_the_query_log():
    psycopg_cursor()  # the kept cursor made before the log is on
    with CaptureQueriesContext(connection) as queries:
        enqueue(GreetingFactory())
    table = Greeting.queue_model._meta.db_table
    assert [q["sql"] for q in queries.captured_queries if f'INSERT INTO "{table}"' in q["sql"]]
