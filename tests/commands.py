"""Helpers for the worker commands run as real subprocesses on the test database, and waiting on them."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
"""The project's root: the working directory of the subprocesses."""

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


def stop_workers(*workers: Command) -> None:
    """Stop ``nexus_worker`` commands with SIGTERM once each has its handler in place (a signal before it kills the
    process, as it would any Python program starting up), and check that each exits cleanly."""
    for worker in workers:
        worker.wait_logged("Worker started")
        worker.proc.send_signal(signal.SIGTERM)
    for worker in workers:
        assert worker.finish() == 0, worker.log()


class Commands:
    """Starts ``python -m django <args>`` processes with ``env``, each one's log in ``folder``."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env = env
        self.folder = folder
        self.started: list[Command] = []

    def start(self, *args: str, **extra_env: str) -> Command:
        """Start a command (``extra_env`` added to the environment); its stderr goes to a file."""
        stderr = self.folder / f"stderr-{len(self.started)}.txt"
        with stderr.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "django", *args], env={**self.env, **extra_env}, cwd=ROOT,
                stdout=subprocess.DEVNULL, stderr=err,
            )
        self.started.append(command := Command(proc, stderr))
        return command

    def kill_the_rest(self) -> None:
        """Kill every command started here that is still running."""
        for command in self.started:
            if command.proc.poll() is None:
                command.proc.kill()
                command.proc.wait()


def wait_until(condition: Callable[[], object], what: str, command: Command | None = None) -> None:
    """Poll ``condition`` until true; fail the test naming ``what`` after :data:`PATIENCE` seconds."""
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"Gave up waiting for {what}." + (f"\n{command.log()}" if command else ""))
        time.sleep(0.02)


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
