"""Queue jobs: declaration checks, the job registry, previous_message(), retries, lease renewals."""

from datetime import timedelta

import pytest
from django.utils import timezone

from nexus_queues import QueueJob, Status, enqueue, enqueue_many, lease, previous_message, set_processing_enabled
from nexus_queues.exceptions import AlreadyRegistered, ConfigurationError, NotRegistered
from nexus_queues.jobs.queue_jobs import JobRegistry, jobs
from nexus_queues.models import QueueSettings
from nexus_queues.start_requests import needs_request
from nexus_queues.updates import renew_leases, reschedule, retry_later
from tests.factories import GreetingFactory, ProductFactory
from tests.testapp.jobs import (
    BatchReportJob,
    BeatJob,
    DigestJob,
    ErrandJob,
    GreetingJob,
    Heartbeat,
    InventoryJob,
    PingJob,
    ProductJob,
    ShipmentJob,
)
from tests.testapp.queues import Audit, Greeting, Product


class Recorder(QueueJob, abstract=True):
    """Remembers what process() saw; raises for a greeting named 'boom'."""

    message_class = Greeting
    max_attempts = 3
    backoff = timedelta(seconds=10)

    def process(self, message):
        self.seen = (message.name, previous_message())
        if message.name == "boom":
            raise RuntimeError("boom")


def test_jobs__autodiscovered_from_each_apps_jobs_module():
    """The test app's jobs module is found at start-up: one job per queue (the task queues' jobs beside them)."""
    assert list(jobs)[:9] == [
        BatchReportJob, BeatJob, DigestJob, ErrandJob, GreetingJob, InventoryJob, PingJob, ProductJob, ShipmentJob,
    ]  # fmt: skip
    assert [job.message_class.queue_name() for job in list(jobs)[9:]] == ["tasks_default", "tasks_reports", "tours"]
    assert jobs.get("products") is ProductJob


def test_jobs__unknown_queue_names_those_with_jobs():
    """Asking for a queue without a job says which queues have one."""
    queues = "batch_reports, beats, digests, errands, greetings, inventory"
    with pytest.raises(NotRegistered, match=f"No job processes queue 'audits'. Queues with jobs: {queues}"):
        jobs.get("audits")


def test_job_registry__second_job_for_a_queue_is_refused():
    """Two jobs for one queue raise AlreadyRegistered naming both."""
    registry = JobRegistry()
    registry.register(GreetingJob)
    with pytest.raises(AlreadyRegistered, match="GreetingJob and .*Recorder"):
        registry.register(Recorder)


def test_job_registry__same_job_twice_is_harmless():
    """Re-registering the same job (a module imported twice) changes nothing."""
    registry = JobRegistry()
    registry.register(GreetingJob)
    registry.register(GreetingJob)
    assert list(registry) == [GreetingJob]


@pytest.mark.parametrize(
    ("attrs", "error"),
    [
        ({}, "message_class must be a queue's message class"),
        ({"message_class": int}, "message_class must be a queue's message class"),
        ({"message_class": Audit, "batch_size": 0}, "batch_size must be a positive integer"),
        ({"message_class": Audit, "max_attempts": 0}, "max_attempts must be a positive integer"),
        ({"message_class": Audit, "lease_time": 30}, "lease_time must be a positive timedelta"),
        ({"message_class": Audit, "backoff": timedelta(0)}, "backoff must be a positive timedelta"),
    ],
)
def test_queue_job__bad_declarations_are_refused(attrs, error):
    """A job class with a bad option fails when it is defined, saying which option."""
    with pytest.raises(ConfigurationError, match=error):
        type("BadJob", (QueueJob,), attrs)
    assert "audits" not in [job.message_class.queue_name() for job in jobs]


def test_previous_message__none_outside_a_job():
    """Outside a job there is no previous message."""
    assert previous_message() is None


@pytest.mark.django_db
def test_run_one__sets_previous_message_for_the_job_only():
    """process() sees the item's previous version; afterwards previous_message() is None again."""
    new, old = ProductFactory.build(name="new"), ProductFactory.build(name="old")
    item = Product.queue_model(message=new, previous_message=old)

    class Seer(QueueJob, abstract=True):
        message_class = Product

        def process(self, message):
            self.seen = (message.name, previous_message().name)

    job = Seer()
    assert job.run_one(item) is None
    assert job.seen == ("new", "old")
    assert previous_message() is None


def test_run_one__an_exception_becomes_the_outcome():
    """An exception in process() is returned as the item's outcome, not raised."""
    outcome = Recorder().run_one(Greeting.queue_model(message=Greeting(name="boom")))
    assert isinstance(outcome, RuntimeError)


def test_retry_at__doubles_the_backoff_until_attempts_are_used_up():
    """Retries wait backoff, then twice that; after max_attempts there is none."""
    now = timezone.now()
    job = Recorder()
    at = [job.retry_at(Greeting.queue_model(attempts=n), now) for n in (1, 2, 3)]
    assert at == [now + timedelta(seconds=10), now + timedelta(seconds=20), None]


def test_process_batch__default_calls_process_per_item():
    """The default batch form maps each failing item to its exception and leaves the rest out of errors."""
    ok = Greeting.queue_model(pk=1, message=Greeting(name="fine"))
    bad = Greeting.queue_model(pk=2, message=Greeting(name="boom"))
    outcomes = Recorder().process_batch([ok, bad])
    assert outcomes[1] is None and isinstance(outcomes[2], RuntimeError)


def test_process__not_implemented_names_the_job():
    """A job implementing neither form says what to implement."""

    class Lazy(QueueJob, abstract=True):
        message_class = Greeting

    outcome = Lazy().run_one(Greeting.queue_model(message=Greeting(name="x")))
    assert isinstance(outcome, NotImplementedError) and "process(message) or process_batch(items)" in str(outcome)


@pytest.mark.django_db
def test_renew_leases__extends_only_leases_still_held():
    """The heartbeat's update moves lease expiry forward for held rows and reports lost ones."""
    enqueue_many(GreetingFactory.build_batch(2))
    held, lost = lease(Greeting, 2, lease_time=timedelta(seconds=5))
    Greeting.queue_model.objects.filter(pk=lost.pk).update(status=Status.ABANDONED)
    until = timezone.now() + timedelta(minutes=5)
    assert renew_leases([held, lost], until) == [held.pk]
    assert Greeting.queue_model.objects.get(pk=held.pk).lease_expires_at == until
    assert Greeting.queue_model.objects.get(pk=lost.pk).lease_expires_at < until


@pytest.mark.django_db
def test_reschedule__reset_attempts_starts_the_count_afresh():
    """A successful run asking to run again later starts its attempt count at zero."""
    enqueue(GreetingFactory.build())
    [item] = lease(Greeting, 1)
    assert reschedule([item], timezone.now(), reset_attempts=True) == [item.pk]
    stored = Greeting.queue_model.objects.get()
    assert (stored.status, stored.attempts, item.attempts) == (Status.SLEEPING, 0, 0)


@pytest.mark.django_db
def test_set_processing_enabled__stored_per_queue():
    """Switching a queue's processing off and on is kept in the queue settings table."""
    set_processing_enabled("greetings", False)
    assert QueueSettings.objects.get(queue="greetings").processing_enabled is False
    set_processing_enabled(Greeting, True)
    assert QueueSettings.objects.get(queue="greetings").processing_enabled is True


@pytest.mark.django_db
def test_retry_later__sleeps_with_the_failure_kept():
    """A failed attempt to be retried sleeps until its time and shows why it failed."""
    enqueue(GreetingFactory.build())
    [item] = lease(Greeting, 1)
    at = timezone.now() + timedelta(seconds=30)
    try:
        raise KeyError("missing")
    except KeyError as exc:
        assert retry_later([item], exc, at) == [item.pk]
    stored = Greeting.queue_model.objects.get()
    assert (stored.status, stored.process_at, stored.attempts) == (Status.SLEEPING, at, 1)
    assert stored.error_type == "builtins.KeyError" and 'raise KeyError("missing")' in stored.error_traceback


@pytest.mark.parametrize("job", [DigestJob, GreetingJob], ids=["scheduled", "continuous"])
def test_timetable__deprecated_name_of_get_schedule(job):
    """timetable(), the old name of get_schedule(), warns and gives the same schedule."""
    with pytest.warns(DeprecationWarning, match=r"timetable\(\) is deprecated: call get_schedule\(\)"):
        assert job.timetable() == job.get_schedule()


def test_timetable__deprecated_on_periodic_jobs_too():
    """A periodic job's timetable() warns and gives its get_schedule()."""
    with pytest.warns(DeprecationWarning, match=r"PeriodicJob\.timetable\(\) is deprecated"):
        assert Heartbeat.timetable() == Heartbeat.get_schedule()


def test_job_registry__tells_the_data_layer_which_queues_start_on_request():
    """Registering a scheduled job makes its queue's start need a stored request; a continuous job's does not, so
    enqueue(start_processing=True) writes a request without importing jobs."""
    assert needs_request(DigestJob.message_class) is True
    assert needs_request(GreetingJob.message_class) is False
