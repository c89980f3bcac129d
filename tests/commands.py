"""Running the worker commands as real subprocesses on the test database, and waiting on them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

PATIENCE = 60.0
"""Seconds a test waits for something that must happen; reaching it fails the test."""


@dataclass
class Command:
    """A started ``manage.py`` command, its output in files."""

    proc: subprocess.Popen[bytes]
    stderr: Path

    def log(self) -> str:
        """What it logged so far."""
        return self.stderr.read_text()

    def wait_logged(self, text: str) -> None:
        """Wait until ``text`` appears in its log."""
        wait_until(lambda: text in self.log(), f"{text!r} in the log of {self.proc.args}", self)

    def finish(self) -> int:
        """Wait for it to exit; its return code."""
        return self.proc.wait(timeout=PATIENCE)


def wait_until(condition: Callable[[], object], what: str, command: Command | None = None) -> None:
    """Poll ``condition`` until true; fail the test naming ``what`` after :data:`PATIENCE` seconds."""
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"Gave up waiting for {what}." + (f"\n{command.log()}" if command else ""))
        time.sleep(0.02)


@pytest.fixture(name="files")
def files_fixture(tmp_path: Path) -> dict[str, Path]:
    """The report file the test jobs write and the gate file that releases blocked jobs."""
    return {"out": tmp_path / "out.txt", "gate": tmp_path / "gate"}


@pytest.fixture(name="manage")
def manage_fixture(
    child_env: dict[str, str], files: dict[str, Path], tmp_path: Path
) -> Iterator[Callable[..., Command]]:
    """Start ``python -m django <args>`` on the test database; killed at the end if still running."""
    started: list[Command] = []
    env = {**child_env, "NEXUS_TEST_OUT": str(files["out"]), "NEXUS_TEST_GATE": str(files["gate"])}

    def start(*args: str, **extra_env: str) -> Command:
        stderr = tmp_path / f"stderr-{len(started)}.txt"
        with stderr.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "django", *args], env={**env, **extra_env}, cwd=ROOT,
                stdout=subprocess.DEVNULL, stderr=err,
            )
        started.append(command := Command(proc, stderr))
        return command

    yield start
    for command in started:
        if command.proc.poll() is None:
            command.proc.kill()
            command.proc.wait()


def reports(files: dict[str, Path]) -> list[list[str]]:
    """The test jobs' report lines, split into words."""
    out = files["out"]
    return [line.split() for line in out.read_text().splitlines()] if out.exists() else []


def kill_other_connections() -> int:
    """Kill, on the server, every connection to the test database but this process's own; how many."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return int(cursor.fetchone()[0])
        cursor.execute("SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()")
        ids = [row[0] for row in cursor.fetchall()]
        for pid in ids:
            cursor.execute(f"KILL {int(pid)}")
        return len(ids)
