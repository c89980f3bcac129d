"""System checks: missing queue tables and indexes are reported with how to fix them."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection

from nexus_queues.checks import check_live_worker_settings, check_settings, check_tables
from tests.testapp.queues import Greeting


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_check_tables__quiet_when_migrated():
    assert check_tables(databases=["default"]) == []


def test_check_tables__skipped_without_database_flag():
    """Like Django's database checks, nothing is queried unless databases are named."""
    assert check_tables(databases=None) == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_check_tables__missing_index_warns():
    """A dropped index gives W003 naming the index and its columns."""
    index = next(i for i in Greeting.queue_model._meta.indexes if i.fields == ["status", "id"])
    with connection.schema_editor() as editor:
        editor.remove_index(Greeting.queue_model, index)
    try:
        [warning] = check_tables(databases=["default"])
        assert warning.id == "nexus_queues.W003"
        assert index.name in warning.msg and "status, id" in warning.msg
    finally:
        with connection.schema_editor() as editor:
            editor.add_index(Greeting.queue_model, index)
    assert check_tables(databases=["default"]) == []


@pytest.mark.django_db(transaction=True)
def test_check_tables__missing_table_warns():
    """A queue whose table is gone gives W002 with the fix."""
    with connection.schema_editor() as editor:
        editor.delete_model(Greeting.queue_model)
    try:
        [warning] = check_tables(databases=["default"])
        assert warning.id == "nexus_queues.W002" and "nexus_greetings" in warning.msg
        assert warning.hint == "Run makemigrations and migrate."
    finally:
        with connection.schema_editor() as editor:
            editor.create_model(Greeting.queue_model)


@pytest.mark.django_db
def test_partial_index__limited_where_the_engine_can():
    """The due, expires and correlation indexes skip other rows where the engine has partial indexes."""
    due = next(i for i in Greeting.queue_model._meta.indexes if i.name.endswith("_due"))
    sql = str(due.create_sql(Greeting.queue_model, connection.schema_editor()))
    assert ("WHERE" in sql) is connection.features.supports_partial_indexes
    assert "process_at" in sql


def test_check_job_schedules__names_the_job_with_a_bad_schedule():
    """A job whose schedule is not one fails the system checks with E001 naming it, at start-up."""
    from nexus_queues.checks import check_job_schedules
    from nexus_queues.jobs.periodic_jobs import PeriodicJob, periodic_jobs

    class Garbled(PeriodicJob):
        schedule = "every tuesday"

    try:
        [error] = check_job_schedules()
        assert error.id == "nexus_queues.E001" and Garbled.name() in error.msg and "'every tuesday'" in error.msg
    finally:
        periodic_jobs._jobs.pop(Garbled.name())
    assert check_job_schedules() == []


def test_check_live_worker_settings__quiet_by_default():
    assert check_live_worker_settings() == []


@pytest.mark.parametrize(("name", "value"), [
    ("WORKER_HEARTBEAT_INTERVAL", 10), ("HEALTH_NO_WORKER_GRACE", timedelta(0)),
    ("WORKER_PROCESS_RETENTION", timedelta(seconds=-1)),
])
def test_check_settings__names_a_bad_live_worker_time_with_its_own_id(settings, name, value):
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, name: value}
    [error] = check_settings()
    assert error.id == "nexus_queues.E002" and name in error.msg and "a timedelta above 0" in error.msg


def test_check_live_worker_settings__gone_after_must_outlast_a_heartbeat(settings):
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "WORKER_GONE_AFTER": timedelta(seconds=10)}
    [error] = check_live_worker_settings()
    assert error.id == "nexus_queues.E002" and "live processes would show as gone" in error.msg


def test_check_settings__quiet_by_default():
    assert check_settings() == []


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("METRICS_TIME_BUDGET", 5, "a timedelta above 0"), ("METRICS_TIME_BUDGET", timedelta(0), "a timedelta above 0"),
    ("METRICS_COUNT_LIMIT", 0, "a whole number (int) at least 1"),
    ("METRICS_COUNT_LIMIT", 1e5, "a whole number (int) at least 1"),
    ("METRICS_COUNT_LIMIT", True, "a whole number (int) at least 1"),
])
def test_check_settings__names_a_bad_metrics_value_with_its_own_id(settings, name, value, expected):
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, name: value}
    [error] = check_settings()
    assert error.id == "nexus_queues.E003" and name in error.msg and expected in error.msg


@pytest.mark.django_db(databases="__all__")  # manage.py check asks each database what it supports
def test_check_settings__fails_manage_py_check(settings):
    """The check is registered: ``manage.py check`` refuses a scrape without a time budget."""
    settings.NEXUS_QUEUES = {**settings.NEXUS_QUEUES, "METRICS_TIME_BUDGET": None}
    with pytest.raises(SystemCheckError, match=r"nexus_queues\.E003.*METRICS_TIME_BUDGET"):
        call_command("check")


def test_check_api_docs_offline__warns_without_ninja_installed(run_django):
    """W004 says the API docs page would load Swagger UI from a CDN, and how to serve it locally instead."""
    code = "from nexus_queues.checks import check_api_docs_offline as c\nfor w in c(): print(w.id, w.msg, w.hint)\n"
    bare = run_django(code, settings="tests.settings_bare")
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout.startswith("nexus_queues.W004 The API docs page (/nexus/docs) loads Swagger UI from a CDN")
    assert 'Add "ninja" to INSTALLED_APPS' in bare.stdout
    assert run_django(code).stdout == ""


def test_check_api_docs_offline__passes_a_project_without_urlconf(run_django):
    """A project with no ROOT_URLCONF (workers or scripts only) serves no docs page: nothing to warn about."""
    code = (
        "from django.conf import settings\ndel settings.ROOT_URLCONF\n"
        "from nexus_queues.checks import check_api_docs_offline as c\nprint(c())\n"
    )
    result = run_django(code, settings="tests.settings_bare")
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr
