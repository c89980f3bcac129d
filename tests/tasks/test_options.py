"""A NexusBackend's OPTIONS: defaults, and wrong values refused by name."""

from datetime import timedelta

import pytest

from nexus_queues.contrib.tasks.options import BackendOptions, backend_options, declared_queues
from nexus_queues.exceptions import ConfigurationError


def test_backend_options__defaults():
    """No OPTIONS: one task per lease, no retry, SUCCESSFUL results kept a week, on the default database."""
    assert backend_options("default", {}) == BackendOptions(
        batch_size=1, max_attempts=1, keep_results_for=timedelta(days=7), database="default"
    )


@pytest.mark.parametrize(
    ("options", "named"),
    [({"batch": 2}, "batch"), ({"batch_size": 0}, "batch_size"), ({"max_attempts": True}, "max_attempts"),
     ({"keep_results_for": 5}, "keep_results_for"), ({"database": "nope"}, "database"),
     ({"backoff": timedelta(0)}, "backoff")],
)
def test_backend_options__wrong_values_are_refused_by_name(options, named):
    """An unknown key or a wrong value raises ConfigurationError naming it."""
    with pytest.raises(ConfigurationError, match=named):
        backend_options("default", options)


def test_declared_queues__each_queue_of_the_nexus_backends():
    """The test settings' NexusBackend names two task queues."""
    assert sorted(declared_queues()) == ["default", "reports"]
