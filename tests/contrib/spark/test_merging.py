"""What a sync's tasks do around staging: Python's cycle collector held off per batch, and given back."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from nexus_queues.contrib.spark.merging import cycle_collector_held


@pytest.fixture
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_restored")
def test_cycle_collector_held__off_inside_on_after() -> None:
    """The collector is off while a batch is staged and on again after, also when the batch raises."""
    gc.enable()

    with pytest.raises(ValueError), cycle_collector_held():
        inside = gc.isenabled()
        raise ValueError

    assert (inside, gc.isenabled()) == (False, True)


@pytest.mark.usefixtures("collector_restored")
def test_cycle_collector_held__leaves_it_off_when_it_was() -> None:
    """A process that had turned the collector off finds it off after a batch."""
    gc.disable()

    with cycle_collector_held():
        pass

    assert not gc.isenabled()
