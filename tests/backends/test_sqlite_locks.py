"""SQLite: the settings changes that read a row and then write it take the write lock first.

Otherwise a writer that comes between the read and the write deadlocks with them, and SQLite fails the
settings change at once with "database is locked" instead of letting the writer wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from django.db import connections
from django.db.models.signals import pre_save
from django.utils import timezone

from nexus_queues import set_default_status, set_processing_enabled
from nexus_queues.jobs.control import run_now
from nexus_queues.models import JobRun, PeriodicJobSettings, QueueSettings
from tests.commands import PATIENCE
from tests.testapp.jobs import Heartbeat
from tests.testapp.queues import Inventory

pytestmark = [pytest.mark.engines("sqlite"), pytest.mark.django_db(transaction=True)]

WRITER_STARTED = 0.3
"""Seconds the change waits after starting the other writer, so that the writer is waiting to commit."""


@pytest.fixture
def writer_between_read_and_write() -> Iterator[Callable[[], list[BaseException]]]:
    """On the first settings row saved, another connection starts writing a row before the save goes on.

    Yields a function that waits for that writer and returns its errors.
    """
    errors: list[BaseException] = []
    writers: list[threading.Thread] = []

    def write() -> None:
        try:
            JobRun.objects.create(job="other", correlation_id="other", worker="other", started_at=timezone.now())
        except BaseException as exc:  # handed to the test
            errors.append(exc)
        finally:
            connections.close_all()

    def between(**_: object) -> None:
        if not writers:
            writers.append(threading.Thread(target=write))
            writers[0].start()
            time.sleep(WRITER_STARTED)

    for model in (QueueSettings, PeriodicJobSettings):
        pre_save.connect(between, sender=model, dispatch_uid="writer_between")

    def finished() -> list[BaseException]:
        assert writers, "the settings change saved no row: the writer never came between"
        writers[0].join(PATIENCE)
        assert not writers[0].is_alive(), "the other writer did not finish"
        return errors

    try:
        yield finished
    finally:
        for model in (QueueSettings, PeriodicJobSettings):
            pre_save.disconnect(sender=model, dispatch_uid="writer_between")
        for writer in writers:
            writer.join(PATIENCE)


CHANGES: dict[str, Callable[[], object]] = {
    "set_processing_enabled": lambda: set_processing_enabled(Inventory, False),
    "set_default_status": lambda: set_default_status(Inventory, "Paused"),
    "run_now": lambda: run_now(Heartbeat),
}


@pytest.mark.parametrize("change", CHANGES)
def test_settings_change__waits_for_a_concurrent_writer_instead_of_failing(writer_between_read_and_write, change):
    """The change and the other writer both succeed (the second waits for the first)."""
    if change == "run_now":  # its row exists, so that it is read and then updated
        PeriodicJobSettings.objects.bulk_create([PeriodicJobSettings(job=Heartbeat.name(), ticks_since=timezone.now())])
    CHANGES[change]()
    assert writer_between_read_and_write() == []
    assert JobRun.objects.filter(job="other").count() == 1
