"""Housekeeping: expired leases become Abandoned; old Processed rows, expired messages, old job runs and the rows of
processes long stopped or gone are deleted."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from nexus_queues import Status, enqueue, enqueue_many, lease
from nexus_queues.models import JobRun
from nexus_queues.processes import WorkerProcess, WorkerProcessQueue
from nexus_queues.worker import housekeeping
from nexus_queues.worker.housekeeping import drop_expired, purge_job_runs, purge_processed, tidy, tidy_queue
from tests.factories import GreetingFactory, LeasedFactory, PendingFactory, ProcessedFactory
from tests.testapp.queues import Audit, Greeting, Inventory

pytestmark = pytest.mark.django_db


@override_settings(NEXUS_QUEUES={"WORKER_CLEANUP_BATCH_SIZE": 2})
def test_purge_processed__deletes_rows_past_keep_processed_for_in_batches():
    """Processed rows older than the queue's keep time go, in batches; newer ones and other statuses stay."""
    ProcessedFactory.create_batch(5, queue=Inventory)
    PendingFactory.create(queue=Inventory)
    day_later = timezone.now() + timedelta(days=1, seconds=1)
    assert purge_processed(timezone.now())["inventory"] == 0
    assert purge_processed(day_later)["inventory"] == 5
    assert list(Inventory.queue_model.objects.values_list("status", flat=True)) == [Status.PENDING]


def test_purge_processed__keeps_forever_when_the_queue_says_so():
    """A queue keeping processed messages forever is never purged."""
    ProcessedFactory.create(queue=Audit)
    assert "audits" not in purge_processed(timezone.now() + timedelta(days=3650))
    assert Audit.queue_model.objects.get().status == Status.PROCESSED


def test_drop_expired__deletes_waiting_messages_past_their_expiry_only():
    """Pending and Sleeping messages past expires_at go; Leased ones and unexpired ones stay."""
    now = timezone.now()
    enqueue_many(GreetingFactory.build_batch(2), expires_at=now + timedelta(seconds=10))
    enqueue(GreetingFactory.build(), at=now + timedelta(hours=1), expires_at=now + timedelta(seconds=10))
    enqueue(GreetingFactory.build(), expires_at=now + timedelta(hours=1))
    lease(Greeting, 1)
    counts = drop_expired(now + timedelta(seconds=11))
    assert counts["greetings"] == 2
    assert sorted(Greeting.queue_model.objects.values_list("status", flat=True)) == [Status.LEASED, Status.PENDING]


def test_tidy__does_all_four_chores():
    """tidy abandons expired leases, purges, drops and recounts, reporting counts per chore and queue."""
    LeasedFactory.create(queue=Greeting, lease_expires_at=timezone.now() + timedelta(seconds=1))
    counts = tidy(timezone.now() + timedelta(seconds=2))
    assert counts["abandoned"]["greetings"] == 1
    assert set(counts) == {"abandoned", "purged", "dropped", "recounted"}
    assert Greeting.queue_model.objects.get().status == Status.ABANDONED


def test_tidy_queue__does_the_chores_of_one_queue_only():
    """tidy_queue abandons, purges, drops and recounts in its queue and leaves the others' rows as they are."""
    soon = timezone.now() + timedelta(seconds=1)
    later = timezone.now() + timedelta(days=2)
    LeasedFactory.create(queue=Greeting, lease_expires_at=soon)
    ProcessedFactory.create(queue=Inventory)
    LeasedFactory.create(queue=Inventory, lease_expires_at=soon)
    assert tidy_queue(Inventory, later) == {"abandoned": 1, "purged": 1, "dropped": 0, "recounted": 0}
    assert list(Inventory.queue_model.objects.values_list("status", flat=True)) == [Status.ABANDONED]
    assert Greeting.queue_model.objects.get().status == Status.LEASED


def _runs_started(*ages: timedelta) -> list[int]:
    """One job run per age, in this order (so that ids grow as the test says); their ids."""
    now = timezone.now()
    return [
        JobRun.objects.create(job="tests.Job", correlation_id=str(n), worker="w:1", started_at=now - age).pk
        for n, age in enumerate(ages)
    ]


@override_settings(NEXUS_QUEUES={"WORKER_CLEANUP_BATCH_SIZE": 2, "JOB_RUN_RETENTION": timedelta(days=14)})
def test_purge_job_runs__deletes_runs_past_the_retention_oldest_first_in_batches():
    """Runs that started more than JOB_RUN_RETENTION ago go, over several batches; the ones within it stay."""
    days = [timedelta(days=d) for d in (30, 20, 16, 15, 13, 1)]
    kept = _runs_started(*days)[-2:]
    assert purge_job_runs("default") == 4
    assert sorted(JobRun.objects.values_list("id", flat=True)) == kept
    assert purge_job_runs("default") == 0


@override_settings(NEXUS_QUEUES={"JOB_RUN_RETENTION": None})
def test_purge_job_runs__keeps_runs_forever_without_a_retention():
    """JOB_RUN_RETENTION None deletes nothing."""
    _runs_started(timedelta(days=3650))
    assert purge_job_runs("default") == 0 and JobRun.objects.count() == 1


@override_settings(NEXUS_QUEUES={"WORKER_CLEANUP_BATCH_SIZE": 2})
def test_purge_job_runs__stops_at_the_first_run_within_the_retention():
    """The oldest ids are read first: a recent run ahead of an old one (a clock that went back) holds it for later,
    rather than the chore reading the whole table."""
    _runs_started(timedelta(days=30), timedelta(days=1), timedelta(days=30), timedelta(days=30))
    assert purge_job_runs("default") == 1
    assert JobRun.objects.count() == 3


def test_forget_processes__deletes_only_rows_silent_past_the_retention():
    """Stopped and gone processes last heard from before the retention go (their queue rows with them); live ones,
    and those stopped or gone more recently, stay."""
    now = timezone.now()
    day = timedelta(days=1)

    def process(seen, stopped):
        row = WorkerProcess.objects.create(kind="worker", host="h", pid=1, version="0", started_at=seen - day,
                                           last_seen_at=seen, stopped_at=seen if stopped else None, doing="idle")
        WorkerProcessQueue.objects.create(process=row, queue="greetings")
        return row

    old_stopped, old_gone = process(now - day - timedelta(seconds=1), True), process(now - day * 2, False)
    kept = {process(now - day + timedelta(seconds=1), True).pk, process(now - timedelta(hours=2), False).pk,
            process(now, False).pk}
    assert housekeeping.forget_processes(now) == 2
    assert set(WorkerProcess.objects.values_list("pk", flat=True)) == kept
    assert set(WorkerProcessQueue.objects.values_list("process", flat=True)) == kept
    assert not WorkerProcess.objects.filter(pk__in=[old_stopped.pk, old_gone.pk]).exists()
    assert housekeeping.forget_processes(now) == 0
