"""Task tables lease by priority; other queues keep their FIFO (status, id) index and order."""

from nexus_queues.models import index_name
from nexus_queues.tasks.queues import task_queue
from tests.testapp.queues import Greeting


def test_lease_ordering__only_task_tables_carry_priority():
    """The status index of a task table leads with priority; a plain queue's stays (status, id)."""
    def status_index(model):
        name = index_name(model._meta.db_table, "status")
        return next(i.fields for i in model._meta.indexes if i.name == name)

    assert status_index(task_queue("default").queue_model) == ["status", "-priority", "id"]
    assert status_index(Greeting.queue_model) == ["status", "id"]
    assert not any(f.name == "priority" for f in Greeting.queue_model._meta.fields)
