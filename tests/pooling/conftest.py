"""Fixtures of the PgBouncer tests: a real PgBouncer in transaction pooling mode for the run, this process's
default connection through it, and worker commands whose default database goes through it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings

from tests import pgbouncer
from tests.commands import Command, Commands
from tests.required import missing


@pytest.fixture(scope="session")
def bouncer() -> Iterator[pgbouncer.Bouncer]:
    """PgBouncer (transaction pooling) in front of the test database's server, for the whole run."""
    if connection.vendor != "postgresql":
        pytest.skip(f"PgBouncer stands in front of PostgreSQL, this run is {connection.vendor}")
    if not pgbouncer.available():
        missing("no PgBouncer for the transaction-pooling tests", "apt-get install pgbouncer")
    started = pgbouncer.start(connection.settings_dict)
    yield started
    pgbouncer.stop(started)


@pytest.fixture
def pooled(transactional_db: None, bouncer: pgbouncer.Bouncer) -> Iterator[None]:
    """This process's default connection goes through PgBouncer for the test, prepared statements off."""
    direct = connection.settings_dict
    connection.close()
    connection.settings_dict = pgbouncer.through(direct, bouncer)
    given = {**getattr(settings, "NEXUS_QUEUES", {}), "PREPARED_STATEMENTS": False}
    try:
        with override_settings(NEXUS_QUEUES=given):
            yield
    finally:
        connection.close()
        connection.settings_dict = direct


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """The report file the test jobs write and the gate file that releases blocked jobs."""
    return {"out": tmp_path / "out.txt", "gate": tmp_path / "gate"}


@pytest.fixture
def manage(
    child_env: dict[str, str], bouncer: pgbouncer.Bouncer, files: dict[str, Path], tmp_path: Path
) -> Iterator[Callable[..., Command]]:
    """Start ``python -m django <args>`` with its default database through PgBouncer; killed at the end."""
    env = {
        **child_env, "DJANGO_SETTINGS_MODULE": "tests.settings_pgbouncer",
        "NEXUS_TEST_PGBOUNCER_PORT": str(bouncer.port),
        "NEXUS_TEST_OUT": str(files["out"]), "NEXUS_TEST_GATE": str(files["gate"]),
    }
    commands = Commands(env, tmp_path)
    yield commands.start
    commands.kill_the_rest()
