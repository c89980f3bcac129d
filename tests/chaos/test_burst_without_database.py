"""``nexus_worker --burst`` run from cron against a database that is down, not migrated, or that the server refuses:
it exits non-zero with a one-line reason (a closed port: once the database has failed for
``WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER``; no tables, or a database or user the server does not know: at once), where
it retried for ever and cron never heard of the failure."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.commands import ROOT

pytestmark = pytest.mark.slow  # each test starts worker processes

HANG_GUARD = 120
"""Seconds after which a worker that has not exited is taken as hanging (the failure this module is about)."""


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def burst(tmp_path: Path, database_url: str, command: str = "nexus_worker") -> subprocess.CompletedProcess[str]:
    """Run ``manage.py <command> --burst`` on ``database_url`` with 2 s breakers; the finished process."""
    (tmp_path / "burst_settings.py").write_text(
        "from datetime import timedelta\nfrom tests.settings import *\n"
        "NEXUS_QUEUES = {**NEXUS_QUEUES, 'WORKER_TIME_TO_TRIGGER_CIRCUIT_BREAKER': timedelta(seconds=2),\n"
        "                'DISPATCH_TIME_TO_TRIGGER_CIRCUIT_BREAKER': timedelta(seconds=2)}\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("NEXUS_TEST_")}
    env |= {"PYTHONPATH": f"{ROOT}:{tmp_path}", "DJANGO_SETTINGS_MODULE": "burst_settings",
            "DATABASE_URL": database_url}
    return subprocess.run([sys.executable, "-m", "django", command, "--burst"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=HANG_GUARD)


def url_down(tmp_path: Path) -> str:
    """The engine under test at an address where no server answers (SQLite: a file in a missing folder)."""
    if connection.vendor == "sqlite":
        return f"sqlite:///{tmp_path}/missing/folder/db.sqlite3"
    scheme = {"postgresql": "postgres", "mysql": "mysql"}[connection.vendor]
    user = connection.settings_dict["USER"]
    return f"{scheme}://{user}@127.0.0.1:{closed_port()}/nq_nowhere"


@pytest.fixture
def url_unmigrated(tmp_path: Path, django_db_blocker: pytest.FixtureRequest) -> Iterator[str]:
    """A new, empty database on the engine under test (dropped afterwards)."""
    if connection.vendor == "sqlite":
        yield f"sqlite:///{tmp_path}/empty.sqlite3"
        return
    name = f"nq_unmigrated_{uuid.uuid4().hex[:8]}"
    settings = connection.settings_dict
    scheme = {"postgresql": "postgres", "mysql": "mysql"}[connection.vendor]
    with django_db_blocker.unblock(), connection._nodb_cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{scheme}://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{name}"
    finally:
        with django_db_blocker.unblock(), connection._nodb_cursor() as cursor:  # type: ignore[attr-defined]
            cursor.execute(f"DROP DATABASE {name}")


@pytest.mark.parametrize("command", ["nexus_worker", "nexus_dispatch"])
def test_burst__a_database_that_is_down_exits_1_with_one_line(tmp_path: Path, command: str) -> None:
    """No server at the database's address: the burst worker (or dispatch loop) gives up once its breaker's time is
    over, exit 1 (the dispatch loop exited 0, as if it had dispatched)."""
    done = burst(tmp_path, url_down(tmp_path), command)
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: The database ") and "2 s" in last, done.stderr[-3000:]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["nexus_worker", "nexus_dispatch"])
def test_burst__an_unmigrated_database_exits_1_at_once(tmp_path: Path, url_unmigrated: str, command: str) -> None:
    """An empty database: the burst worker (or dispatch loop) says to run migrate, exit 1, before any retry."""
    done = burst(tmp_path, url_unmigrated, command)
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: ") and "manage.py migrate" in last, done.stderr[-3000:]
    assert "retrying" not in done.stderr and "Traceback" not in done.stderr


def url_refused(tmp_path: Path, refused: str) -> str:
    """The engine under test's server asked for a database, or by a user, it does not know (SQLite: a file that is
    not a database)."""
    if connection.vendor == "sqlite":
        (tmp_path / "not_a_database.sqlite3").write_text("a text file, not a database\n" * 10)
        return f"sqlite:///{tmp_path}/not_a_database.sqlite3"
    settings = connection.settings_dict
    scheme = {"postgresql": "postgres", "mysql": "mysql"}[connection.vendor]
    unknown = f"nq_unknown_{uuid.uuid4().hex[:8]}"
    user, name = (settings["USER"], unknown) if refused == "database" else (unknown, settings["NAME"])
    return f"{scheme}://{user}@{settings['HOST']}:{settings['PORT']}/{name}"


@pytest.mark.parametrize("refused", ["database", "user"])
@pytest.mark.parametrize("command", ["nexus_worker", "nexus_dispatch"])
def test_burst__a_database_or_user_the_server_refuses_exits_1_at_once(tmp_path: Path, command: str,
                                                                      refused: str) -> None:
    """A database name or user the server does not know is a configuration error: exit 1 in one line naming the
    database, before any retry (it was retried until the breaker's time was over, 26 s by default)."""
    done = burst(tmp_path, url_refused(tmp_path, refused), command)
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: Database 'default' refuses the connection ("), done.stderr[-3000:]
    assert "fix DATABASES['default']" in last
    assert "retrying" not in done.stderr and "Traceback" not in done.stderr
