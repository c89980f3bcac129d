"""The backend's system checks, as the framework's check() reports them."""

from django.test import override_settings

from nexus_queues.contrib.tasks.compat import task_backends


def test_check__configured_backend_reports_nothing():
    """With the app installed and MIGRATION_MODULES set, check() has no message (no warning either)."""
    assert list(task_backends["default"].check()) == []


def test_check__missing_migration_module_is_an_error():
    """Without MIGRATION_MODULES["nexus_tasks"], check() says where the task queues' migrations must go."""
    with override_settings(MIGRATION_MODULES={}):
        [error] = task_backends["default"].check()
    assert error.id == "nexus_queues.tasks.E002" and "makemigrations nexus_tasks" in error.hint
