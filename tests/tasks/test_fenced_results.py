"""A task's result is saved by the write that completes its row, fenced by the lease: a worker that lost the lease
saves nothing of it (run in process, one worker run at a time)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nexus_queues import Status
from nexus_queues.contrib.tasks.compat import TaskResultStatus
from nexus_queues.contrib.tasks.queues import task_queue
from nexus_queues.contrib.tasks.running import TaskJob
from nexus_queues.models import JobRun
from nexus_queues.worker.lease_renewal import LeaseRenewal
from nexus_queues.worker.runs import run_once
from tests.testapp import tasks

pytestmark = pytest.mark.django_db

RESULT = ("started_at", "finished_at", "worker_ids", "return_value", "errors")


def default_job() -> type[TaskJob]:
    """The job of the ``default`` task queue."""
    message_class = task_queue("default")
    return next(job for job in TaskJob.__subclasses__() if job.message_class is message_class)


class Pair(default_job(), abstract=True):  # type: ignore[misc]
    """The same job, two tasks a run."""

    batch_size = 2


def row(result_id: str) -> dict[str, object]:
    return task_queue("default").queue_items().values("status", "correlation_id", *RESULT).get(message_id=result_id)


def test_run__a_task_processed_saves_its_result_with_its_row():
    """The result is on the row once it is Processed: on PostgreSQL, in the run's one acknowledging statement."""
    result = tasks.add.enqueue(2, 3)
    with CaptureQueriesContext(connection) as queries:
        assert run_once(default_job(), LeaseRenewal()) == 1
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 5
    assert result.started_at <= result.finished_at and len(result.worker_ids) == 1 and result.errors == []
    if connection.vendor == "postgresql":
        assert len(queries.captured_queries) == 2, [q["sql"] for q in queries.captured_queries]  # lease, finish


@pytest.mark.parametrize("job", [default_job(), Pair], ids=["batch 1", "batch 2"])
@pytest.mark.parametrize("outcome", ["done", "fail"])
def test_run__a_worker_that_lost_the_lease_saves_no_result(job, outcome):
    """A task whose row another worker leased meanwhile: whether it returned or raised, its row keeps no result and
    its status, and the run counts it neither processed nor failed; the other task of the batch keeps its result."""
    lost, other = tasks.leased_away.enqueue(outcome), tasks.add.enqueue(1, 1)
    assert run_once(job, LeaseRenewal()) == (2 if job is Pair else 1)
    assert row(lost.id) == {
        "status": Status.LEASED, "correlation_id": "another", **dict.fromkeys(RESULT),
    }
    run = JobRun.objects.order_by("pk").first()
    assert (run.processed, run.errors) == ((1 if job is Pair else 0), 0)
    if job is Pair:
        assert tasks.add.get_result(other.id).return_value == 2
