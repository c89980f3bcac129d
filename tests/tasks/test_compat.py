"""The one compat module: Django's own django.tasks when it exists, else the django_tasks backport."""

from importlib.util import find_spec

from nexus_queues.contrib.tasks import compat


def test_compat__prefers_django_tasks_when_present():
    """On Django 6 the names come from django.tasks; on 5.2 from the backport."""
    expected = "django.tasks" if find_spec("django.tasks") else "django_tasks"
    assert compat.Task.__module__.startswith(expected)
    assert compat.task_backends.__class__.__module__.startswith(expected)
