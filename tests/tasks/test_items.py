"""Task tables lease by priority; other queues keep their FIFO (status, id) index and order."""

import pytest
from django.db import connection

from nexus_queues.contrib.tasks.queues import task_queue
from nexus_queues.models import index_name
from tests.testapp import tasks
from tests.testapp.queues import Greeting


def test_lease_ordering__only_task_tables_carry_priority():
    """The status index of a task table leads with priority; a plain queue's stays (status, id)."""
    def status_index(model):
        name = index_name(model._meta.db_table, "status")
        return next(i.fields for i in model._meta.indexes if i.name == name)

    assert status_index(task_queue("default").queue_model) == ["status", "-priority", "id"]
    assert status_index(Greeting.queue_model) == ["status", "id"]
    assert not any(f.name == "priority" for f in Greeting.queue_model._meta.fields)


@pytest.mark.django_db
@pytest.mark.engines("postgresql")
def test_in_line__first_in_line_is_one_probe_of_the_status_index():
    """The first Pending task (the one health, the overview and a lease read) comes from the status index in
    its order, without filtering or sorting the table's rows."""
    first = task_queue("default").queue_items().in_line().values_list("updated_at", flat=True)[:1]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = first.explain()
    assert "_status" in plan and "Filter" not in plan and "Sort" not in plan, plan


@pytest.mark.django_db
def test_in_line__highest_priority_first_then_fifo():
    """Pending tasks are in line by priority, then in the order they were enqueued; other statuses are not."""
    low = tasks.add.using(priority=-5).enqueue(1, 1)
    top = tasks.add.using(priority=9).enqueue(2, 2)
    second_top = tasks.add.using(priority=9).enqueue(3, 3)
    held = tasks.add.using(priority=50).enqueue(4, 4)
    rows = task_queue("default").queue_items()
    rows.filter(message_id=held.id).update(status="OnHold")
    assert list(rows.in_line().values_list("message_id", flat=True)) == [top.id, second_top.id, low.id]
