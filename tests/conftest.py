"""Shared fixtures: the engine under test, and subprocesses that use the test database."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator

import pytest
from django.apps import apps
from django.db import connection, connections
from pytest_django import DjangoDbBlocker

from nexus_queues.messages import QueueMessage
from nexus_queues.registry import registry
from tests import pgcluster
from tests.commands import ROOT
from tests.required import REQUIRED, missing

pytest_plugins = ["tests.browser"]
"""The browser tests' ``page``, wherever they are."""


SERVERS = {"postgresql": ("PostgreSQL", 5432, "POSTGRES_URL"), "mysql": ("MariaDB", 3306, "MARIADB_URL")}
"""Each database server's name, default port, and the variable that points tox's run at another one."""


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[None]:
    """pytest-django's test databases, every alias's connection closed before they are dropped: the ``queues``
    alias (the same database) kept its session open, and PostgreSQL refused to drop a database in use."""
    yield
    with django_db_blocker.unblock():
        connections.close_all()


def pytest_sessionstart(session: pytest.Session) -> None:
    """A database server that does not answer ends the run in one line: a skip, or a failure in CI."""
    if connection.vendor not in SERVERS or str(connection.settings_dict["HOST"]).startswith("/"):
        return
    name, default_port, variable = SERVERS[connection.vendor]
    host, port = connection.settings_dict["HOST"] or "localhost", int(connection.settings_dict["PORT"] or default_port)
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as exc:
        verdict = "CI requires it" if REQUIRED else "this engine's tests are skipped"
        pytest.exit(f"No {name} at {host}:{port} ({exc}), {verdict}: start it, or point {variable} (tox) or "
                    f"DATABASE_URL at one", returncode=pytest.ExitCode.TESTS_FAILED if REQUIRED else pytest.ExitCode.OK)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Skipped tests, one line per reason (what is missing and how to get it) rather than one per test."""
    reasons = Counter(
        str(report.longrepr[2]).removeprefix("Skipped: ")
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple)
    )
    if reasons:
        terminalreporter.section("skipped, by reason")
    for reason, count in reasons.most_common():
        terminalreporter.line(f"SKIPPED [{count}] {reason}")


SLOW_FIXTURES = {
    "page", "spark", "frame", "spark_cluster", "java", "broker", "manage", "run_python", "run_django", "demo_python",
    "pg_cluster",
}  # fmt: skip
"""A test using one of these (a browser, Spark, the broker, processes of its own) takes seconds: it is marked slow."""


@pytest.hookimpl(tryfirst=True)  # before ``-m "not slow"`` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests using :data:`SLOW_FIXTURES` are ``slow``; ``@pytest.mark.engines("postgresql", ...)`` runs a test only
    on those vendors."""
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        marker = item.get_closest_marker("engines")
        if marker and connection.vendor not in marker.args:
            item.add_marker(
                pytest.mark.skip(reason=f"needs {' or '.join(marker.args)}, this run is {connection.vendor}")
            )


@pytest.fixture
def run_django() -> object:
    """Run ``code`` after ``django.setup()`` in a fresh interpreter with ``settings``; returns the finished process."""

    def run(code: str, settings: str = "tests.settings") -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-c", "import django; django.setup()\n" + code]
        return subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)

    return run


@pytest.fixture
def child_env(transactional_db: None) -> dict[str, str]:
    """Environment for a subprocess that must see this test's committed rows."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "NEXUS_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
        "PYTHONPATH": str(ROOT),
    }


@pytest.fixture
def run_python(child_env: dict[str, str]) -> Iterator[object]:
    """Start ``python -c code`` with Django set up on the test database; returns Popen objects."""
    started: list[subprocess.Popen[str]] = []

    def start(code: str, *args: str) -> subprocess.Popen[str]:
        prelude = "import django; django.setup()\n"
        proc = subprocess.Popen(
            [sys.executable, "-c", prelude + code, *args],
            env=child_env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def scratch() -> Iterator[None]:
    """Forget the queues and models a test defines in the scratch module (``__module__ = "tests.testapp.scratch"``)."""
    before = set(apps.all_models["testapp"])
    yield
    for model_name in set(apps.all_models["testapp"]) - before:
        model = apps.all_models["testapp"].pop(model_name)
        if (
            model.message_class.queue_name() in registry
            and registry.get(model.message_class.queue_name()) is model.message_class
        ):
            registry.unregister(model.message_class.queue_name())
    apps.clear_cache()


@pytest.fixture
def elsewhere() -> Iterator[type[QueueMessage]]:
    """A queue kept in the ``queues`` database (the same test database under a second alias)."""
    before = set(apps.all_models["testapp"])

    class Elsewhere(QueueMessage, queue="elsewhere", database="queues"):
        __module__ = "tests.testapp.scratch"
        text: str

    yield Elsewhere
    for model_name in set(apps.all_models["testapp"]) - before:
        apps.all_models["testapp"].pop(model_name)
    registry.unregister("elsewhere")
    apps.clear_cache()


@pytest.fixture(scope="session")
def java() -> None:
    """Spark runs on the machine's Java: the tests that start Spark skip without it (fail in CI)."""
    if not shutil.which("java"):
        missing("no Java for Spark", "apt-get install openjdk-17-jre-headless (or put java on PATH)")


@pytest.fixture
def pg_cluster() -> Iterator[pgcluster.Cluster]:
    """A throwaway PostgreSQL cluster of the test's own, running (the test may stop and start it); removed after."""
    if not pgcluster.available():
        missing("no PostgreSQL server binaries (initdb, pg_ctl) for a cluster of the test's own",
                "apt-get install postgresql")
    with pgcluster.started() as cluster:
        yield cluster
