"""Spark's JVM reaching the queues' database with JDBC: URL and properties from Django's settings, the driver check,
and a real read through Spark's JDBC source."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings
from pyspark.sql import SparkSession

from nexus_queues import enqueue
from nexus_queues.backends import backend_for
from nexus_queues.backends.jdbc import Jdbc, MariaDBJdbc, PostgresJdbc
from nexus_queues.contrib.spark.jdbc import connection, has_driver
from nexus_queues.exceptions import NoJvmPath
from tests.commands import PATIENCE, ROOT
from tests.testapp.queues import Greeting

SETTINGS = {"HOST": "db.example", "PORT": "6543", "NAME": "shop", "USER": "shop", "PASSWORD": "s3cret", "OPTIONS": {}}


def test_postgres_jdbc__url_and_properties() -> None:
    """PgJDBC reaches the alias's host, port and database as its user, with batched inserts rewritten and strings
    typed by their column (text into jsonb and timestamptz)."""
    jdbc = PostgresJdbc.connect(SETTINGS, time_zone="UTC")

    assert jdbc == Jdbc("jdbc:postgresql://db.example:6543/shop", {
        "driver": "org.postgresql.Driver", "reWriteBatchedInserts": "true", "stringtype": "unspecified",
        "user": "shop", "password": "s3cret",
    })
    assert jdbc.driver == "org.postgresql.Driver"
    assert jdbc.options(dbtable="t", fetchsize=10) == {"url": jdbc.url, **jdbc.properties, "dbtable": "t",
                                                       "fetchsize": "10"}


def test_postgres_jdbc__carries_the_libpq_options_pgjdbc_has() -> None:
    """sslmode, connect_timeout, application_name... go by PgJDBC's names; Django's own options are not carried."""
    options = {"sslmode": "verify-full", "sslrootcert": "/ca.pem", "connect_timeout": 7, "application_name": "shop",
               "isolation_level": 1, "server_side_binding": True}
    properties = PostgresJdbc.connect({**SETTINGS, "OPTIONS": options}, time_zone="UTC").properties

    assert {key: properties[key] for key in ("sslmode", "sslrootcert", "connectTimeout", "ApplicationName")} == {
        "sslmode": "verify-full", "sslrootcert": "/ca.pem", "connectTimeout": "7", "ApplicationName": "shop",
    }
    assert not {"isolation_level", "server_side_binding"} & set(properties)


def test_postgres_jdbc__behind_a_transaction_pooler_prepares_nothing() -> None:
    """Through a transaction pooler each transaction may get another server session: no prepared statements."""
    assert PostgresJdbc.connect(SETTINGS, time_zone="UTC", pooled=True).properties["prepareThreshold"] == "0"
    assert "prepareThreshold" not in PostgresJdbc.connect(SETTINGS, time_zone="UTC").properties


def test_mariadb_jdbc__url_and_properties() -> None:
    """MariaDB's driver under a jdbc:mysql: URL (Spark's MySQL dialect), batched inserts rewritten, times in the
    zone Django stores them in."""
    jdbc = MariaDBJdbc.connect({**SETTINGS, "PORT": 3307}, time_zone="UTC")

    assert jdbc == Jdbc("jdbc:mysql://db.example:3307/shop", {
        "driver": "org.mariadb.jdbc.Driver", "rewriteBatchedStatements": "true", "useLegacyDatetimeCode": "false",
        "serverTimezone": "UTC", "user": "shop", "password": "s3cret",
    })


def test_mariadb_jdbc__carries_timeout_and_tls() -> None:
    options = {"connect_timeout": 5, "ssl": {"ca": "/ca.pem"}, "charset": "utf8mb4"}
    properties = MariaDBJdbc.connect({**SETTINGS, "OPTIONS": options}, time_zone="Europe/Stockholm").properties

    assert {key: properties[key] for key in ("connectTimeout", "useSsl", "serverSslCert", "serverTimezone")} == {
        "connectTimeout": "5000", "useSsl": "true", "serverSslCert": "/ca.pem", "serverTimezone": "Europe/Stockholm",
    }


@pytest.mark.parametrize("driver", [PostgresJdbc, MariaDBJdbc])
def test_jdbc__empty_host_and_port_are_localhost_and_the_default(driver: Any) -> None:
    jdbc = driver.connect({"NAME": "shop", "HOST": "", "PORT": ""}, time_zone="UTC")

    assert jdbc.url == f"jdbc:{driver.scheme}://localhost:{driver.default_port}/shop"
    assert not {"user", "password"} & set(jdbc.properties)


@pytest.mark.parametrize("driver", [PostgresJdbc, MariaDBJdbc])
def test_jdbc__an_ipv6_host_is_bracketed(driver: Any) -> None:
    assert driver.connect({**SETTINGS, "HOST": "::1"}, time_zone="UTC").url.startswith(f"jdbc:{driver.scheme}://[::1]:")


@pytest.mark.engines("sqlite")
def test_connection__sqlite_has_no_jvm_path() -> None:
    with pytest.raises(NoJvmPath, match="SQLite, which Spark's JVM does not reach: it takes one writer at a time"):
        connection("default")


@pytest.mark.engines("postgresql", "mysql")
@pytest.mark.django_db
def test_connection__reaches_the_test_database() -> None:
    """The URL names the database the alias uses now: in a test run, the test database."""
    name = connections["default"].settings_dict["NAME"]

    assert name.startswith("test_") and connection("default").url.endswith(f"/{name}")


@pytest.mark.engines("postgresql", "mysql")
def test_connection__a_unix_socket_has_no_jvm_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connections["queues"].settings_dict, "HOST", "/run/db")

    with pytest.raises(NoJvmPath, match="Database 'queues' is reached through the Unix socket /run/db: JDBC needs TCP"):
        connection("queues")


@pytest.mark.engines("postgresql")
def test_connection__behind_a_pooler_takes_the_direct_alias_or_prepares_nothing(monkeypatch: Any) -> None:
    """An alias behind a transaction pooler is reached through its WAKEUP_DATABASES alias where it names one (as
    the driver's lock is), else through the pooler with no prepared statements."""
    monkeypatch.setitem(connections["queues"].settings_dict, "DISABLE_SERVER_SIDE_CURSORS", True)
    monkeypatch.setitem(connections["queues"].settings_dict, "PORT", "6432")

    assert connection("queues").properties["prepareThreshold"] == "0" and ":6432/" in connection("queues").url
    with override_settings(NEXUS_QUEUES={"WAKEUP_DATABASES": {"queues": "default"}}):
        assert connection("queues") == connection("default")


@pytest.mark.engines("postgresql", "mysql")
def test_has_driver__asks_the_sessions_class_loader(spark: SparkSession, jdbc: Jdbc) -> None:
    """The engine's driver, added with spark.jars, loads; a class on no class path does not."""
    assert has_driver(spark, jdbc.driver)
    assert not has_driver(spark, "org.example.NoSuchDriver")


@pytest.mark.engines("postgresql", "mysql")
@pytest.mark.django_db(transaction=True)
def test_jdbc__spark_reads_a_row_of_the_test_database(spark: SparkSession, jdbc: Jdbc) -> None:
    """Spark's JDBC source reads a queue's row as Django stored it: text outside the BMP, times in UTC (the JVM
    runs in another time zone), a filter pushed into SQL."""
    enqueue(Greeting(name="Ada 😀"))
    item = Greeting.queue_items().get()
    table = Greeting.queue_model._meta.db_table

    df = spark.read.jdbc(jdbc.url, table, properties=jdbc.properties)
    rows = df.where(df.id == item.pk).select("id", "message", "created_at").collect()

    assert spark._jvm.java.util.TimeZone.getDefault().getID() != "UTC"  # type: ignore[union-attr]
    assert [(row.id, "Ada 😀" in row.message, row.created_at.replace(tzinfo=UTC)) for row in rows] == [
        (item.pk, True, item.created_at)
    ]


# Without spark.jars, the engine's driver is missing: asked twice, it warns once; a read takes the data source.
WITHOUT_DRIVER = """
import logging
from nexus_queues.contrib.spark import read, session
from nexus_queues.contrib.spark.jdbc import jvm_connection
from nexus_queues.exceptions import NoJvmPath

logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
spark = session("local[1]", **{"spark.ui.enabled": "false"})
for _ in range(2):
    try:
        jvm_connection(spark, "default")
    except NoJvmPath as exc:
        print("NoJvmPath:", exc)
print("read:", read(spark, "greetings").collect()[0].name)
"""


@pytest.mark.engines("postgresql", "mysql")
def test_jvm_connection__without_the_driver_names_the_package_and_warns_once(child_env: dict[str, str]) -> None:
    """A session without the engine's driver is told which package to add, in one warning per session; read() then
    reads with the nexus data source."""
    enqueue(Greeting(name="Ada"))
    driver = backend_for("default").jdbc_driver
    assert driver is not None
    code = "import django; django.setup()\n" + WITHOUT_DRIVER
    done = subprocess.run([sys.executable, "-c", code], env=child_env, cwd=ROOT, capture_output=True, text=True,
                          timeout=5 * PATIENCE)  # fmt: skip

    said = f"spark.jars.packages={driver.maven} (or spark.jars={driver.jar}, from Debian's {driver.debian})"
    assert done.stdout.count(f"NoJvmPath: Spark cannot load {driver.driver}") == 2 and said in done.stdout, done.stderr
    assert done.stderr.count("WARNING Spark cannot load") == 1, done.stderr
    assert "Until then it takes the Python path." in done.stderr
    assert "read: Ada" in done.stdout, done.stderr
