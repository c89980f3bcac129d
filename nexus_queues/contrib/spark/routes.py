"""Which path a sync takes, and why: Spark's JVM where it can (the message class compiled to column expressions,
the staged rows written by Spark's JDBC writer), else the ``nexus`` data source, whose Python workers validate
each row with the message class."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from ...backends.jdbc import Jdbc
from ...exceptions import NoJvmPath
from ...messages import QueueMessage
from .compiling import NotCompilable, session_time_zone, staged_columns
from .jdbc import jvm_connection
from .models import Sync


@dataclass(frozen=True)
class Route:
    """A sync's path: with ``jdbc`` (the class compiled) the JVM's."""

    reason: str
    jdbc: Jdbc | None = None

    @property
    def path(self) -> Sync.Path:
        """The path, as the sync's record holds it."""
        return Sync.Path.PYTHON if self.jdbc is None else Sync.Path.JVM


def choose(df: DataFrame, message_class: type[QueueMessage], *, jvm: bool = True) -> Route:
    """The path a sync of ``df`` into the queue of ``message_class`` takes; ``jvm=False`` keeps the Python path."""
    if not jvm:
        return Route("The caller asked for the Python path (jvm=False).")
    if df.isStreaming:
        return Route("A stream: Spark's JDBC writer has no streaming sink.")
    alias = message_class.queue_options.database
    try:
        jdbc = jvm_connection(df.sparkSession, alias)
        staged_columns(message_class, df.schema, time_zone=session_time_zone(df.sparkSession))  # it compiles
    except (NoJvmPath, NotCompilable) as exc:
        return Route(str(exc))
    return Route(
        f"Spark's JDBC writer reaches database {alias!r} and {message_class.__qualname__} compiles to column "
        "expressions.",
        jdbc,
    )
