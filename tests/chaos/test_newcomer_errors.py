"""Error paths a newcomer met on a fresh clone, each now one clear line: a queue class whose migration was never made
passed ``manage.py check`` (then ``enqueue`` failed with a raw "no such table")."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from nexus_queues import QueueMessage
from nexus_queues.checks import check_queue_migrations


@pytest.mark.django_db(databases="__all__")  # manage.py check asks each database what it supports
def test_check__a_queue_without_its_migration_is_an_error(scratch: None) -> None:
    """``manage.py check`` fails with E005, naming the queue, what the migration would do, and the command to run."""

    class Fresh(QueueMessage, queue="fresh_arrivals"):
        __module__ = "tests.testapp.scratch"
        name: str

    with pytest.raises(SystemCheckError) as caught:
        call_command("check")
    said = str(caught.value)
    assert "(nexus_queues.E005) Queue 'fresh_arrivals' needs a migration that was never made: Create model " in said
    assert "HINT: Run manage.py makemigrations testapp, then migrate." in said


def test_check__the_migrated_queues_pass() -> None:
    """Every queue of the test project is as its migrations make it (no false alarm), read without a database."""
    assert check_queue_migrations() == []

