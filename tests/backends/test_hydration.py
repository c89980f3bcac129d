"""New model instances built without ``Model.__init__``'s cost per field are the instances it builds."""

from datetime import UTC, datetime

import pytest
from django.db.models.signals import post_init

from nexus_queues.backends.hydration import new
from nexus_queues.models import JobRun
from tests.testapp.queues import Greeting

STARTED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
VALUES = {"job": "j", "queue": "q", "correlation_id": "c" * 32, "worker": "h:1", "started_at": STARTED}


def fields(instance: object) -> dict[str, object]:
    return {name: value for name, value in vars(instance).items() if name != "_state"}


def test_new__is_what_init_builds():
    built, made = new(JobRun, **VALUES), JobRun(**VALUES)
    assert type(built) is JobRun and fields(built) == fields(made)
    assert (built._state.adding, built._state.db) == (True, None)
    assert (built.leased, built.error, built.finished_at, built.pk) == (0, "", None, None)


@pytest.mark.django_db
def test_new__saves_as_a_new_row():
    run = new(JobRun, **VALUES)
    run.save()
    assert JobRun.objects.get(pk=run.pk).correlation_id == "c" * 32


def test_new__a_default_made_per_instance_goes_through_init():
    """A queue row's headers default to a new dict each: two rows never share one."""
    first, second = new(Greeting.queue_model), new(Greeting.queue_model)
    assert first.headers == {} and first.headers is not second.headers


def test_new__an_unknown_name_is_init_s_error():
    with pytest.raises(TypeError, match="unexpected keyword arguments: 'jobs'"):
        new(JobRun, jobs="j")


def test_new__init_signal_receivers_are_sent():
    seen = []

    def receiver(sender: type, instance: JobRun, **kwargs: object) -> None:
        seen.append(instance.correlation_id)

    post_init.connect(receiver, sender=JobRun)
    try:
        new(JobRun, **VALUES)
    finally:
        post_init.disconnect(receiver, sender=JobRun)
    assert seen == ["c" * 32]
