"""The ``nexus`` data source, and the SparkSession that knows it.

Spark unpickles the data source in its own processes before Django is set up there: what needs
models is imported once it is.
"""

from __future__ import annotations

import os
import sys
from typing import ClassVar

from django.apps import apps
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType

from ...exceptions import ConfigurationError, InvalidArgument
from ...registry import registry
from .executors import DjangoSetup, django_ready, shared_database
from .options import WriteOptions, read_options, write_options
from .writing import StreamWriter, SyncWriter

REGISTERED = "spark.nexus_queues.registered"
"""Set on a session once :func:`register` gave it the data source."""


class NexusDataSource(DataSource):
    """``spark.read.format("nexus")`` and ``df.write.format("nexus")`` / ``writeStream`` on a queue."""

    django: ClassVar[DjangoSetup | None] = None
    """The driver's Django setup, which :func:`register` gives the registered subclass."""

    @classmethod
    def name(cls) -> str:
        return "nexus"

    def schema(self) -> StructType:
        from .schema import spark_schema

        queue = read_options(self.options).queue
        with django_ready(self.django):
            return spark_schema(registry.get(queue))

    def reader(self, schema: StructType) -> DataSourceReader:
        from .reading import QueueReader

        options = read_options(self.options)
        with django_ready(self.django):
            self._check(options.queue)
            return QueueReader.plan(options, schema, self.django)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = self._write_options(overwrite)
        return SyncWriter.start(options, self.django)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = self._write_options(overwrite)
        return StreamWriter.start(options, self.django)  # type: ignore[return-value]

    def _write_options(self, overwrite: bool) -> WriteOptions:
        if overwrite:
            raise InvalidArgument('A queue is merged into, never overwritten: write with .mode("append").')
        options = write_options(self.options)
        with django_ready(self.django):
            self._check(options.queue)
        return options

    def _check(self, queue: str) -> None:
        if not apps.is_installed("nexus_queues.contrib.spark"):
            raise ConfigurationError('Add "nexus_queues.contrib.spark" to INSTALLED_APPS (and migrate) to use Spark.')
        shared_database(registry.get(queue).queue_options.database)


def register(spark: SparkSession) -> None:
    """Register the ``nexus`` data source on ``spark``, carrying this process's Django settings to Spark's,
    and make ``spark`` the calling thread's active session."""
    _activate(spark)
    if spark.conf.get(REGISTERED, "") == "true":
        return
    setup = DjangoSetup.of_this_process()
    # A class made here is pickled by value: every Spark process that unpickles it gets the setup.
    source = type("RegisteredNexusDataSource", (NexusDataSource,), {"django": setup, "__module__": __name__})
    spark.dataSource.register(source)
    spark.conf.set(REGISTERED, "true")


def _activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread's JVM thread."""
    # Spark looks Python data sources up in the JVM thread's active session: a thread of the driver
    # that never made one active (a thread pool's) would not find "nexus". PySpark has no public call for it.
    jvm = spark._jvm
    if jvm is not None:
        SparkSession._get_j_spark_session_class(jvm).setActiveSession(spark._jsparkSession)


def session(master: str | None = None, **conf: str) -> SparkSession:
    """A SparkSession (local Spark unless ``master`` names a cluster) with the ``nexus`` data source registered.

    ``conf`` holds Spark settings, as ``session(**{"spark.executor.memory": "4g"})``. Spark's Python
    processes run this Python unless ``PYSPARK_PYTHON`` says otherwise.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("nexus_queues")
    if master:
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
