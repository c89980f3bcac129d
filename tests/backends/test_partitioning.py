"""PostgreSQL: a queue table partitioned by month, by the SQL the Scaling page shows, works as before."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from nexus_queues import Status, enqueue, enqueue_many, lease, mark_processed
from nexus_queues.models import JobRun
from nexus_queues.worker.housekeeping import tidy_queue
from tests.docs.pages import ROOT
from tests.factories import GreetingFactory
from tests.testapp.queues import Greeting, Product

pytestmark = [pytest.mark.django_db, pytest.mark.engines("postgresql")]

PAGE = ROOT / "docs" / "guide" / "scaling.md"


def partition_sql(table: str = "nexus_greetings") -> str:
    """The page's partitioning block, for ``table``."""
    blocks = re.findall(r"^```sql\n(.*?)^```", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    [block] = [b for b in blocks if b.startswith("-- Partition nexus_greetings")]
    return block.replace("nexus_greetings", table)


def partitions() -> dict[str, int]:
    """Rows per partition of the greetings' table."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text, count(*) FROM nexus_greetings GROUP BY 1")
        return dict(cursor.fetchall())


def test_partitioned__enqueue_lease_acknowledge_tidy():
    """Rows already stored are moved over; enqueue, COPY, the worker's claim, acknowledgements and housekeeping
    work on the partitioned table as on the plain one."""
    before = GreetingFactory.build_batch(3)
    enqueue_many(before)
    with connection.cursor() as cursor:
        cursor.execute(partition_sql())
    assert sum(partitions().values()) == 3
    after = GreetingFactory.build_batch(500)
    enqueue_many(after)  # COPY
    enqueue(Greeting(name="last"))
    run = JobRun(job="greetings", queue="greetings", correlation_id="c1", worker="here", started_at=timezone.now())
    items = lease(Greeting, 1000, correlation_id="c1", run=run)  # the worker's claim, with its run's row
    assert [i.message for i in items] == [*before, *after, Greeting(name="last")]
    assert JobRun.objects.get(correlation_id="c1").leased == 504
    assert len(mark_processed(items)) == 504
    assert Greeting.queue_items().count() == 0  # Processed greetings are deleted
    enqueue(Greeting(name="expired"), expires_at=timezone.now() + timedelta(seconds=1))
    assert tidy_queue(Greeting, now=timezone.now() + timedelta(minutes=1))["dropped"] == 1


def test_partitioned__archive_by_detaching_a_month():
    """A month holding only Processed rows is detached whole: the queue no longer shows it, the rows are kept."""
    with connection.cursor() as cursor:
        cursor.execute(partition_sql())
    enqueue_many(GreetingFactory.build_batch(4))
    october = datetime(2026, 10, 15, tzinfo=UTC)
    old = list(Greeting.queue_items().order_by("pk")[:3].values_list("pk", flat=True))
    Greeting.queue_items().filter(pk__in=old).update(created_at=october, status=Status.PROCESSED)  # rows move
    assert partitions()["nexus_greetings_2026_10"] == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM nexus_greetings_2026_10 WHERE status <> 'Processed'")
        assert cursor.fetchone()[0] == 0
        cursor.execute("ALTER TABLE nexus_greetings DETACH PARTITION nexus_greetings_2026_10")
        cursor.execute("SELECT count(*) FROM nexus_greetings_2026_10")
        assert cursor.fetchone()[0] == 3
    [kept] = Greeting.queue_items()
    assert [item.pk for item in lease(Greeting, 10)] == [kept.pk]


def test_partitioned__a_queue_with_message_ids_cannot_be():
    """A queue with ids keeps them unique in one index over the table: PostgreSQL refuses to partition it by
    time, and nothing is changed."""
    with pytest.raises(DatabaseError, match="lacks column"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(partition_sql(Product.queue_model._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = %s", [Product.queue_model._meta.db_table])
        assert cursor.fetchone()[0] == "r"  # a plain table still
