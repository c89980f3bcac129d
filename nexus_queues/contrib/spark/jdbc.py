"""Spark's JVM reaching a queue's database with JDBC: the URL and properties of a Django alias, and whether the
session can load the engine's driver.

Without the driver a sync or a read takes the Python path, and one warning per session names the package to add:
the JDBC path makes Spark's work faster, and a pipeline that ran before the driver was added keeps running.
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from ...backends import backend_for
from ...backends.jdbc import Jdbc
from ...exceptions import NoJvmPath
from ...pooling import session_alias

__all__ = ["Jdbc", "connection", "has_driver", "jvm_connection"]

logger = logging.getLogger("nexus_queues.spark")
_LOADS: dict[tuple[str, str], bool] = {}
"""Whether a session (its application's id) loads a driver class: Spark's class path is fixed when it starts."""
_WARNED: set[tuple[str, str]] = set()
"""The sessions and drivers whose absence was logged."""


def connection(alias: str) -> Jdbc:
    """How Spark's JVM reaches database ``alias`` (the test database, in a test run); :class:`NoJvmPath` when it
    cannot: SQLite, or a server reached through a Unix socket.

    Behind a transaction pooler, the alias's direct one of ``WAKEUP_DATABASES`` where it names one; else the pooled
    alias, with no prepared statements.
    """
    backend = backend_for(alias)
    if backend.transaction_pooled() and session_alias(alias) != alias:
        backend = backend_for(session_alias(alias))
    driver, wrapper = backend.jdbc_driver, backend.connection
    if driver is None:
        raise NoJvmPath(
            f"Database {alias!r} is SQLite, which Spark's JVM does not reach: it takes one writer at a time, so "
            "Spark's parallel JDBC tasks would only queue for its lock."
        )
    if socket := driver.socket(wrapper.settings_dict):
        raise NoJvmPath(f"Database {wrapper.alias!r} is reached through the Unix socket {socket}: JDBC needs TCP.")
    return driver.connect(wrapper.settings_dict, time_zone=wrapper.timezone_name, pooled=backend.transaction_pooled())


def has_driver(spark: SparkSession, driver: str) -> bool:
    """Can ``spark``'s JVM load the JDBC driver class ``driver`` (with the class loader of ``spark.jars`` and
    ``spark.jars.packages``)? Asked once per session."""
    key = (spark.sparkContext.applicationId, driver)
    if key not in _LOADS:
        _LOADS[key] = _loads(spark, driver)
    return _LOADS[key]


def jvm_connection(spark: SparkSession, alias: str) -> Jdbc:
    """:func:`connection` of ``alias`` when ``spark`` has its driver; else :class:`NoJvmPath` naming the package to
    add, logged as a warning the first time in the session."""
    jdbc = connection(alias)
    if has_driver(spark, jdbc.driver):
        return jdbc
    package = backend_for(alias).jdbc_driver
    assert package is not None  # connection() raised otherwise
    reason = (
        f"Spark cannot load {jdbc.driver}, the JDBC driver of database {alias!r}: add it to the session with "
        f"spark.jars.packages={package.maven} (or spark.jars={package.jar}, from Debian's {package.debian})."
    )
    if (key := (spark.sparkContext.applicationId, jdbc.driver)) not in _WARNED:
        _WARNED.add(key)
        logger.warning("%s Until then it takes the Python path.", reason, extra={"action": "spark_no_jdbc_driver"})
    raise NoJvmPath(reason)


def _loads(spark: SparkSession, driver: str) -> bool:
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: no JVM in this process to ask
        return False
    try:
        jvm.org.apache.spark.util.Utils.classForName(driver, True, False)
    except Exception as exc:  # py4j's Py4JJavaError of a ClassNotFoundException
        if "ClassNotFoundException" not in str(exc):
            raise
        return False
    return True
