"""Python's cycle collector held off by bulk calls (enqueue_many, a sync's staging), and given back as it was."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from nexus_queues import cycle_collector, enqueue_many
from nexus_queues.exceptions import UnstorableValue
from tests.testapp.queues import Audit


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.fixture
def passes() -> Iterator[list[int]]:
    """The generations of the collector's passes while the test runs."""
    seen: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(counted)
    yield seen
    gc.callbacks.remove(counted)


def test_held__off_inside_on_after() -> None:
    """The collector is off in the body and on again after, also when the body raises."""
    gc.enable()

    with pytest.raises(ValueError), cycle_collector.held():
        inside = gc.isenabled()
        raise ValueError

    assert (inside, gc.isenabled()) == (False, True)


def test_held__leaves_it_off_when_it_was() -> None:
    """A process that had turned the collector off finds it off after."""
    gc.disable()

    with cycle_collector.held():
        pass

    assert not gc.isenabled()


def test_held__overlapping_threads_give_it_back_once_both_are_done() -> None:
    """A thread whose hold began while another's was on does not find it off and keep it off: the collector stays
    off until the last hold ends, then is on, as before the first."""
    gc.enable()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def second() -> None:
        first_in.wait(5)
        with cycle_collector.held():
            second_in.set()
            first_out.wait(5)
            seen["after the first left"] = gc.isenabled()

    thread = threading.Thread(target=second)
    thread.start()
    with cycle_collector.held():
        first_in.set()
        second_in.wait(5)
    first_out.set()
    thread.join(5)

    assert seen == {"after the first left": False}
    assert gc.isenabled()


@pytest.mark.django_db
def test_enqueue_many__runs_no_collector_pass_and_gives_it_back(passes: list[int]) -> None:
    """Thousands of rows trigger no pass of the collector while they are made and written (without the hold they
    trigger several); it is on after, also after a batch refused for a bad message. The objects the call left
    behind may take the one pass the collector owes once it is on again, whichever thread allocates next."""
    gc.enable()
    messages = [Audit(event=f"e{i}") for i in range(5000)]
    passes.clear()

    enqueue_many(messages)

    assert len(passes) <= 1 and gc.isenabled()
    with pytest.raises(UnstorableValue):
        enqueue_many([*messages[:10], Audit(event="\x00")])
    assert gc.isenabled()
