"""Our statements are Django's: counted by CaptureQueriesContext and seen by execute_wrapper on every engine."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nexus_queues import enqueue, enqueue_many, lease, mark_processed
from nexus_queues.backends import backend_for
from nexus_queues.updates import mark_error
from tests.factories import GreetingFactory, InventoryFactory, ProductFactory
from tests.testapp.queues import Greeting, Inventory

# Autocommit, as in a worker: the transactions' BEGIN and COMMIT are counted where Django logs them.
pytestmark = pytest.mark.django_db(transaction=True)

# Per engine, the statements each hot path runs, BEGIN and COMMIT included where Django logs them.
STATEMENTS = {
    "enqueue": {"postgresql": 1, "sqlite": 1, "mysql": 1},
    "enqueue with identity": {"postgresql": 1, "sqlite": 1, "mysql": 1},
    # default status read, COPY or INSERT, the NOTIFY (PostgreSQL) or the SQLite write lock first
    "enqueue_many": {"postgresql": 5, "sqlite": 5, "mysql": 4},
    "lease": {"postgresql": 1, "sqlite": 3, "mysql": 4},
    "mark_processed, deleted": {"postgresql": 1, "sqlite": 1, "mysql": 4},
    "mark_processed, kept": {"postgresql": 1, "sqlite": 1, "mysql": 4},
    "mark_error": {"postgresql": 1, "sqlite": 1, "mysql": 4},
}


def counted(path, work):
    """Run ``work``, checking that it ran the statements pinned for ``path`` on this engine."""
    with CaptureQueriesContext(connection) as captured:
        result = work()
    statements = [query["sql"] for query in captured.captured_queries]
    assert len(statements) == STATEMENTS[path][connection.vendor], statements
    return result


def test_hot_paths__statement_counts_pinned():
    """Enqueue, lease and acknowledge run a fixed number of statements, none of them invisible to Django."""
    backend_for(connection.alias).budget()  # read once per connection (MariaDB/MySQL), not per call
    counted("enqueue", lambda: enqueue(GreetingFactory()))
    counted("enqueue with identity", lambda: enqueue(ProductFactory()))
    counted("enqueue_many", lambda: enqueue_many(GreetingFactory.build_batch(5)))
    leased = counted("lease", lambda: lease(Greeting, 3))
    counted("mark_processed, deleted", lambda: mark_processed(leased))
    enqueue_many(InventoryFactory.build_batch(3))
    leased = lease(Inventory, 3)
    kept, failed = leased[:2], leased[2:]
    counted("mark_processed, kept", lambda: mark_processed(kept))
    counted("mark_error", lambda: mark_error(failed, ValueError("bad")))


def test_budget__read_once_per_connection():
    """The byte budget costs a statement on a new connection's first batched write (MariaDB/MySQL), none after."""
    connection.close()
    with CaptureQueriesContext(connection) as captured:
        enqueue_many(GreetingFactory.build_batch(3))
        enqueue_many(GreetingFactory.build_batch(3))
        enqueue(ProductFactory())
    read = [query["sql"] for query in captured.captured_queries if "max_allowed_packet" in query["sql"]]
    assert len(read) == (1 if connection.vendor == "mysql" else 0)


def test_hot_paths__statement_counts_do_not_grow_with_the_batch():
    """Leasing and acknowledging 50 messages runs as many statements as for 3."""
    enqueue_many(GreetingFactory.build_batch(50))
    leased = counted("lease", lambda: lease(Greeting, 50))
    counted("mark_processed, deleted", lambda: mark_processed(leased))


def test_execute_wrapper__sees_our_statements():
    """A wrapper installed with ``connection.execute_wrapper`` sees every hot statement, COPY included."""
    seen = []

    def record(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    table = Greeting.queue_model._meta.db_table
    with connection.execute_wrapper(record):
        enqueue(GreetingFactory())
        enqueue_many(GreetingFactory.build_batch(3))
        mark_processed(lease(Greeting, 4))
    writes = [f"INSERT INTO {connection.ops.quote_name(table)}", f"COPY {connection.ops.quote_name(table)}"]
    assert sum(any(write in sql for write in writes) for sql in seen) == 2
    assert any("'Leased'" in sql for sql in seen)
    assert any(sql.startswith("DELETE FROM") for sql in seen)
    assert Greeting.queue_items().count() == 0
