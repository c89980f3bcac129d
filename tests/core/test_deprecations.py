"""Old import paths keep working for this release, each with a DeprecationWarning naming the new one."""

import importlib

import pytest

import nexus_queues
from nexus_queues.deprecations import MOVED_MODULES
from nexus_queues.jobs import control, periodic_jobs, schedules, timetables


@pytest.mark.parametrize(("old", "name", "new"), [
    ("nexus_queues.job_control", "run_now", control),
    ("nexus_queues.periodic_jobs", "PeriodicJob", periodic_jobs),
    ("nexus_queues.schedules", "Every", schedules),
    ("nexus_queues.worker.timetables", "QueueTimetable", timetables),
])
def test_moved_module__old_path_gives_the_new_objects_with_a_warning(old, name, new):
    """A name read through a moved module's old path is the new module's object, and the warning names the new
    path."""
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} is deprecated: import {new.__name__}\.{name}"):
        found = getattr(module, name)
    assert found is getattr(new, name)


def test_moved_module__every_old_path_is_a_new_module():
    """Each old path in the table points at a module that exists."""
    for new in MOVED_MODULES.values():
        importlib.import_module(new)


def test_moved_module__unknown_name_is_an_attribute_error():
    """A name the new module lacks is an AttributeError through the old path too, not a warning."""
    with pytest.raises(AttributeError):
        importlib.import_module("nexus_queues.schedules").NoSuchName  # noqa: B018


def test_moved_name__set_processing_enabled_in_updates_warns():
    """set_processing_enabled read from nexus_queues.updates is the jobs control's, with a warning."""
    from nexus_queues import updates

    with pytest.warns(DeprecationWarning, match="nexus_queues.jobs.control.set_processing_enabled"):
        found = updates.set_processing_enabled
    assert found is control.set_processing_enabled is nexus_queues.set_processing_enabled


def test_moved_name__unknown_name_is_an_attribute_error():
    """A module with moved names still raises AttributeError for a name it never had."""
    from nexus_queues import updates

    with pytest.raises(AttributeError):
        updates.no_such_name  # noqa: B018


def test_moved_name__dispatch_due_in_updates_is_the_one_dispatch():
    """dispatch_due read from nexus_queues.updates is nexus_queues.dispatching's, with a warning."""
    from nexus_queues import dispatching, updates

    with pytest.warns(DeprecationWarning, match="nexus_queues.dispatching.dispatch_due"):
        found = updates.dispatch_due
    assert found is dispatching.dispatch_due is nexus_queues.dispatch_due


def test_moved_package__tasks_backend_by_its_old_path_warns():
    """``nexus_queues.tasks.NexusBackend`` (a TASKS setting's old path) is the contrib backend, with a warning."""
    from django.utils.module_loading import import_string

    from nexus_queues.contrib.tasks import NexusBackend

    with pytest.warns(DeprecationWarning, match=r"nexus_queues\.tasks\.NexusBackend is deprecated: import "
                                                r"nexus_queues\.contrib\.tasks\.NexusBackend"):
        assert import_string("nexus_queues.tasks.NexusBackend") is NexusBackend


def test_moved_package__a_module_by_its_old_path_warns():
    """A module of the old tasks package forwards to its namesake under contrib, with a warning per name."""
    from nexus_queues.contrib.tasks import compat

    module = importlib.import_module("nexus_queues.tasks.compat")
    with pytest.warns(DeprecationWarning, match=r"nexus_queues\.tasks\.compat\.task is deprecated"):
        assert module.task is compat.task


def test_moved_package__old_app_entry_installs_the_contrib_app_with_a_warning():
    """``"nexus_queues.tasks"`` in INSTALLED_APPS makes the contrib app's config (same label), with a warning."""
    from django.apps import AppConfig

    with pytest.warns(DeprecationWarning, match=r"'nexus_queues\.tasks' in INSTALLED_APPS is deprecated"):
        config = AppConfig.create("nexus_queues.tasks")
    assert (config.name, config.label) == ("nexus_queues.contrib.tasks", "nexus_tasks")
