"""A ``WAKEUP_DATABASES`` alias that reaches a database of the same name on another server (a PostgreSQL cluster of
the test's own), the pooled alias going through a real PgBouncer: ``check --database`` refuses it (E011), a worker
says so as an error and polls rather than listen there, and a Spark driver takes no lock there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection, connections
from django.test import override_settings

from nexus_queues import enqueue
from nexus_queues.contrib.spark.drivers import watched
from nexus_queues.contrib.spark.models import Sync
from nexus_queues.exceptions import WrongWakeupDatabase
from nexus_queues.pooling import check_wakeup_databases
from tests.commands import reports, stop_workers, wait_until
from tests.pgcluster import Cluster
from tests.pooling.conftest import bouncer, files, manage, pooled  # noqa: F401  (the PgBouncer fixtures)
from tests.testapp.queues import Greeting

pytestmark = [
    pytest.mark.engines("postgresql"), pytest.mark.django_db(transaction=True, databases=["default", "queues"]),
]

ELSEWHERE = "they reach different databases"
WAKEUP_ON_QUEUES = {"WAKEUP_DATABASES": {"default": "queues"}}


@pytest.fixture
def other_server(pg_cluster: Cluster) -> Cluster:
    """A cluster of the test's own holding a database of the test database's name."""
    pg_cluster.psql(f'CREATE DATABASE "{connection.settings_dict["NAME"]}"')
    return pg_cluster


@pytest.fixture
def queues_elsewhere(other_server: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ``queues`` alias, same database name, pointed at the other server."""
    queues = connections["queues"]
    queues.close()
    monkeypatch.setitem(queues.settings_dict, "HOST", "127.0.0.1")
    monkeypatch.setitem(queues.settings_dict, "PORT", other_server.port)
    yield
    queues.close()


def test_check__refuses_a_wakeup_alias_on_another_server(pooled, queues_elsewhere):  # noqa: F811
    """The names agree, so the settings alone pass; ``check --database`` asks both servers and fails with E011."""
    with override_settings(NEXUS_QUEUES={**settings.NEXUS_QUEUES, **WAKEUP_ON_QUEUES}):
        assert check_wakeup_databases() == []
        with pytest.raises(SystemCheckError) as refused:
            call_command("check", databases=["default"])
    assert "nexus_queues.E011" in str(refused.value) and ELSEWHERE in str(refused.value)


def test_check__accepts_a_wakeup_alias_of_the_same_database_behind_pgbouncer(pooled):  # noqa: F811
    """The pooled alias through PgBouncer and the direct one reach the same database: no error."""
    with override_settings(NEXUS_QUEUES={**settings.NEXUS_QUEUES, **WAKEUP_ON_QUEUES}):
        assert check_wakeup_databases(databases=["default"]) == []


def test_nexus_worker__polls_with_an_error_rather_than_listen_on_another_server(other_server, manage, files):  # noqa: F811
    """A worker whose wake-up alias reaches another server logs an ERROR naming both databases, opens no listener
    there, and still processes by polling."""
    worker = manage("nexus_worker", "--queue", "greetings", "--peek-delay", "0.1", NEXUS_TEST_WAKEUP_DIRECT="1",
                    NEXUS_TEST_DIRECT_PORT=str(other_server.port))
    wait_until(lambda: ELSEWHERE in worker.log() or "Listening for wake-ups" in worker.log(), "the listener", worker)
    assert f"ERROR nexus_queues.wakeups [-] NEXUS_QUEUES['WAKEUP_DATABASES']['default'] = 'direct': {ELSEWHERE}" in \
        worker.log()
    enqueue(Greeting(name="hello"))
    wait_until(lambda: reports(files), "the polling worker to process the message", worker)
    stop_workers(worker)
    assert "Listening for wake-ups" not in worker.log()


def test_spark_driver_lock__is_not_taken_on_another_server(pooled, queues_elsewhere):  # noqa: F811
    """A sync's driver would hold its lock where the settle step never looks: the sync is refused before it starts."""
    with override_settings(NEXUS_QUEUES={**settings.NEXUS_QUEUES, **WAKEUP_ON_QUEUES}):
        with pytest.raises(WrongWakeupDatabase, match=ELSEWHERE), watched("default", "greetings"):
            pass
    assert not Sync.objects.exists()
