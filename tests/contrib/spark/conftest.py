"""One local Spark for the whole run (it takes seconds to start) on the test databases; a cluster for a test asking."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from nexus_queues.backends import backend_for
from nexus_queues.backends.jdbc import Jdbc
from nexus_queues.contrib.spark import session
from nexus_queues.contrib.spark.jdbc import connection, has_driver
from tests.contrib.spark.cluster import Cluster, standalone_cluster
from tests.required import missing


@pytest.fixture(scope="session")
def spark(java: None, django_db_setup: None, django_db_blocker: Any) -> Iterator[SparkSession]:
    """A local SparkSession of two threads whose processes use this run's test databases; a failed task
    is tried twice (``local[2,2]``), and Arrow batches are small so that a partition stages several. The JDBC
    driver of the run's engine is on its class path where Debian's package put it; the JVM runs in another time zone
    than the database's UTC, so that a time read or written in the JVM's zone shows."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": "-Duser.timezone=Asia/Kathmandu",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100",
    }
    driver = backend_for("default").jdbc_driver
    if driver is not None and Path(driver.jar).is_file():
        conf["spark.jars"] = driver.jar
    if (earlier := SparkSession.getActiveSession()) is not None:
        earlier.stop()  # one a docs snippet started (plain local[2]) would be reused with its own settings
    with django_db_blocker.unblock():
        spark = session("local[2,2]", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


@pytest.fixture
def jdbc(spark: SparkSession) -> Jdbc:
    """How this run's Spark reaches the test database with JDBC; skipped (failed in CI) without the engine's driver.
    Mark the test ``engines("postgresql", "mysql")``: SQLite has no JVM path."""
    jdbc = connection("default")
    if not has_driver(spark, jdbc.driver):
        package = backend_for("default").jdbc_driver
        assert package is not None
        missing(f"no JDBC driver {jdbc.driver} for Spark", f"apt-get install {package.debian} (puts {package.jar})")
    return jdbc


@pytest.fixture
def frame(spark: SparkSession) -> Any:
    """``frame(rows, schema)``: a DataFrame of ``rows`` in two partitions."""

    def make(rows: list[Any], schema: str) -> DataFrame:
        return spark.createDataFrame(rows, schema).repartition(2)

    return make


@pytest.fixture
def spark_cluster(java: None, tmp_path: Path) -> Iterator[Cluster]:
    """A standalone Spark master and worker on 127.0.0.1 for this test, their logs in ``tmp_path``."""
    with standalone_cluster(tmp_path) as cluster:
        yield cluster
