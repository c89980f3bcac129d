"""Job runs' correlation id keeps its unique index alone: the prefix-search index PostgreSQL's schema editor adds
beside it (migration 0014 drops it) cost every run's insert an index entry, and no query reads it."""

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection

from nexus_queues.backends import backend_for
from nexus_queues.models import JobRun

pytestmark = pytest.mark.django_db(transaction=True)


def job_run_indexes() -> dict[str, dict]:
    with connection.cursor() as cursor:
        return connection.introspection.get_constraints(cursor, JobRun._meta.db_table)


def prefix_indexes() -> list[str]:
    return [name for name in job_run_indexes() if name.endswith("_like")]


def test_job_runs__no_prefix_index_and_the_correlation_id_still_unique():
    assert prefix_indexes() == []
    unique = [c["columns"] for c in job_run_indexes().values() if c["unique"] and not c["primary_key"]]
    assert ["correlation_id"] in unique
    JobRun.objects.create(job="j", correlation_id="c" * 32, worker="h:1", started_at="2026-01-01T00:00Z")
    with pytest.raises(IntegrityError):
        JobRun.objects.create(job="j", correlation_id="c" * 32, worker="h:1", started_at="2026-01-01T00:00Z")


def test_job_runs__the_migration_goes_back_and_forth():
    """Back to 0013 the index is there again where the engine makes one; forward it is gone; elsewhere nothing
    changes either way."""
    before = job_run_indexes()
    try:
        call_command("migrate", "nexus_queues", "0013", verbosity=0)
        restored = prefix_indexes()
    finally:
        call_command("migrate", "nexus_queues", verbosity=0)
    if backend_for("default").features.makes_pattern_indexes:
        assert len(restored) == 1 and restored[0].startswith("nexus_job_run_correlation_id_"), restored
    else:
        assert restored == []
    assert job_run_indexes() == before
