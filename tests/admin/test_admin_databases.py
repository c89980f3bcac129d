"""The admin reads a queue's job runs from the queue's database, where the worker writes them."""

import pytest
from django.contrib.admin import site
from django.utils import timezone

from nexus_queues.admin import QueueItemAdmin
from nexus_queues.models import JobRun


@pytest.mark.django_db(databases=["default", "queues"])
def test_job_run__read_from_the_queue_database(elsewhere):
    """A message's job run link finds the run in the queue's database, not in the default one."""
    run = JobRun.objects.using("queues").create(
        job="ElsewhereJob", queue="elsewhere", correlation_id="cid-elsewhere", worker="here:1",
        started_at=timezone.now(),
    )
    item = elsewhere.queue_model(correlation_id=run.correlation_id)
    assert str(run) in QueueItemAdmin(elsewhere.queue_model, site).job_run(item)
