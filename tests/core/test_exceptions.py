"""Every error lives in nexus_queues.exceptions, derives from one base and explains itself."""

import ast
import inspect
from importlib import import_module
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

import nexus_queues
from nexus_queues import exceptions
from nexus_queues.exceptions import ConfigurationError, JobSwitchedOff, NexusQueuesError

PACKAGE = Path(nexus_queues.__file__).parent
ERRORS = [value for value in vars(exceptions).values() if isinstance(value, type) and issubclass(value, Exception)]
ELSEWHERE = {
    "Lost": "pika's AMQPError, so the bridge's outage handling takes it with the broker's own errors",
    "Unconfirmed": "pika's AMQPError, as Lost",
    "Unsupported": "the Spark sync's signal, between its columnar modules, that a batch takes the per-row path; "
    "never raised to a caller",
}
"""Exception classes allowed outside exceptions.py (besides private signals that never leave their module), and
why."""
OLD_HOMES = [
    ("nexus_queues.admin.forms", "RowMoved"),
    ("nexus_queues.api.bodies", "BodyTooLarge"),
    ("nexus_queues.api.filters", "BadFilter"),
    ("nexus_queues.contrib.rabbitmq", "InvalidDelay"),
    ("nexus_queues.contrib.rabbitmq", "InvalidDestination"),
    ("nexus_queues.contrib.rabbitmq", "NotPublished"),
    ("nexus_queues.contrib.rabbitmq", "SourceNotFound"),
    ("nexus_queues.contrib.rabbitmq", "TopologyConflict"),
    ("nexus_queues.contrib.rabbitmq.consuming", "SourceNotFound"),
    ("nexus_queues.contrib.rabbitmq.delays", "TopologyConflict"),
    ("nexus_queues.contrib.rabbitmq.invalid", "InvalidMode"),
    ("nexus_queues.contrib.rabbitmq.publishing", "NotPublished"),
    ("nexus_queues.contrib.spark", "SyncFailed"),
    ("nexus_queues.contrib.spark.syncing", "SyncFailed"),
    ("nexus_queues.jobs.control", "JobSwitchedOff"),
    ("nexus_queues.json_input", "MalformedJSON"),
    ("nexus_queues.jobs.schedules", "InvalidSchedule"),
]
"""Where errors lived before they moved to nexus_queues.exceptions: user code may import them from there."""


def _exception_classes_outside() -> list[str]:
    """``path:Class`` of each public class outside exceptions.py whose bases look like an exception's."""
    names = {error.__name__ for error in ERRORS}
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "exceptions.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_") or node.name in ELSEWHERE:
                continue
            bases = [ast.unparse(base).rpartition(".")[2] for base in node.bases]
            if any(base in names or base.endswith(("Error", "Exception")) for base in bases):
                found.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    return found


def test_errors__all_live_in_the_exceptions_module() -> None:
    """No public exception class is defined outside nexus_queues/exceptions.py."""
    assert _exception_classes_outside() == []


@pytest.mark.parametrize("error", ERRORS, ids=lambda error: error.__name__)
def test_errors__one_base(error: type[Exception]) -> None:
    """Each error derives from NexusQueuesError; a configuration error is also Django's ImproperlyConfigured."""
    if error is not ImproperlyConfigured:
        assert issubclass(error, NexusQueuesError)
    if issubclass(error, ConfigurationError):
        assert issubclass(error, ImproperlyConfigured)


def test_errors__docstring_is_the_default_message() -> None:
    """An error raised without a message says its docstring's first paragraph, on one line."""
    assert str(JobSwitchedOff()) == "A switched-off job is not started: switch it on first."
    assert str(exceptions.InvalidSchedule()) == inspect.cleandoc(exceptions.InvalidSchedule.__doc__ or "").replace(
        "\n", " "
    )
    assert str(exceptions.UnreadableRow()).startswith("A stored row holds a value Python cannot read")
    assert str(JobSwitchedOff("Job x is switched off.")) == "Job x is switched off."


@pytest.mark.parametrize(("module", "name"), OLD_HOMES, ids=lambda value: value)
def test_errors__old_import_paths_still_work(module: str, name: str) -> None:
    """An error that moved to nexus_queues.exceptions is the same class at its old import path."""
    assert getattr(import_module(module), name) is getattr(exceptions, name)


def test_bad_filter__is_still_a_value_error() -> None:
    """BadFilter joined the base and stays a ValueError, so code catching ValueError still catches it."""
    assert issubclass(exceptions.BadFilter, ValueError)
    assert exceptions.BadFilter("Filter 'x': bad.", "x").key == "x"
