"""Fixtures of the worker tests: the commands as subprocesses, the test jobs' report file, a clock the test moves."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.commands import Command, Commands


class FakeClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    """A :class:`FakeClock` for ``Worker(clock=...)``."""
    return FakeClock()


@pytest.fixture
def reported(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The test jobs, run in this process, report to ``files["out"]`` and wait on ``files["gate"]``."""
    monkeypatch.setenv("NEXUS_TEST_OUT", str(files["out"]))
    monkeypatch.setenv("NEXUS_TEST_GATE", str(files["gate"]))
    return files


@pytest.fixture(name="files")
def files_fixture(tmp_path: Path) -> dict[str, Path]:
    """The report file the test jobs write and the gate file that releases blocked jobs."""
    return {"out": tmp_path / "out.txt", "gate": tmp_path / "gate"}


@pytest.fixture(name="manage")
def manage_fixture(
    child_env: dict[str, str], files: dict[str, Path], tmp_path: Path
) -> Iterator[Callable[..., Command]]:
    """Start ``python -m django <args>`` on the test database; killed at the end if still running."""
    reporting = {"NEXUS_TEST_OUT": str(files["out"]), "NEXUS_TEST_GATE": str(files["gate"])}
    commands = Commands({**child_env, **reporting}, tmp_path)
    yield commands.start
    commands.kill_the_rest()
