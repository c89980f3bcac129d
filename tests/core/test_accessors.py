"""A queue's rows, settings and job runs are each reached one way, on the queue's database."""

import pytest
from django.utils import timezone

from nexus_queues.jobs.control import set_processing_enabled
from nexus_queues.models import JobRun, QueueSettings


def test_accessors__use_the_queue_database(elsewhere):
    """Rows, settings and job runs of a queue with ``database=`` are read from that database."""
    assert elsewhere.queue_items().db == elsewhere.queue_settings().db == elsewhere.job_runs().db == "queues"


@pytest.mark.django_db(databases=["default", "queues"])
def test_queue_settings__processing_enabled_until_switched_off(elsewhere):
    """Processing is on while no settings row exists, and follows the row once an operator sets it."""
    assert elsewhere.queue_settings().processing_enabled() is True
    set_processing_enabled(elsewhere, False)
    assert elsewhere.queue_settings().processing_enabled() is False
    assert QueueSettings.objects.using("queues").filter(queue="elsewhere").count() == 1


@pytest.mark.django_db(databases=["default", "queues"])
def test_job_runs__only_the_queue_own(elsewhere):
    """A queue's job runs leave out those of other queues."""
    for queue in ("elsewhere", "greetings"):
        JobRun.objects.using("queues").create(
            job="Job", queue=queue, correlation_id=f"cid-{queue}", worker="here:1", started_at=timezone.now()
        )
    assert list(elsewhere.job_runs().values_list("correlation_id", flat=True)) == ["cid-elsewhere"]
