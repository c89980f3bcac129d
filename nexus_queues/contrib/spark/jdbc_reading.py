"""Reading a queue in Spark's JVM: Spark's JDBC source reads its table, partitioned on the id, and ``from_json``
parses the message's fields with the class's Spark schema, so that no Python worker touches a row.

A filter a query writes is pushed into the SQL where the database and Spark agree on it: comparisons of the id,
the attempts and the text row columns (compared by code point in the SQL, as Spark compares text, whatever the
column's collation). Times and message fields are filtered in Spark: Spark writes a time into SQL without its
offset, in the JVM's time zone. Every query of the DataFrame plans its own SQL, so a filtered query never narrows
a later one (the flaw that keeps the ``nexus`` data source from pushing filters).

Where the JVM cannot read the queue (SQLite, no JDBC driver in the session, a field of JSON text, whose canonical
form only Python writes), :func:`read` takes the ``nexus`` data source, which reads the same rows and values.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType, TimestampType

from ...backends.jdbc import Jdbc
from ...backends.jvm_rows import jvm_rows
from ...exceptions import NoJvmPath
from ...messages import QueueMessage
from ...registry import registry
from .jdbc import jvm_connection
from .options import ReadOptions, read_options
from .reading import RowMaker, id_bounds, narrowing
from .schema import ROW_COLUMNS, holds_json, is_json, message_field, message_keys, row_columns, spark_schema
from .source import register

logger = logging.getLogger("nexus_queues.spark")
FETCH_ROWS = 10_000
"""Rows the driver fetches at a time: a partition streams, and is never held whole in memory."""
RAW = "nexus_row_"
"""Before the table's columns' names in the SQL, so that none meets a message field's name."""
PARSED = "nexus_parsed_message"
"""The message's JSON parsed with the class's Spark schema, a column between the table's and the fields'."""
KEYS = "nexus_message_keys"
"""The keys of the message's JSON, read once a row beside :data:`PARSED`."""
TEXT_COLUMNS = frozenset(column.name for column in ROW_COLUMNS if column.dataType.typeName() == "string")


def read(spark: SparkSession, message_class: type[QueueMessage] | str, **options: Any) -> DataFrame:
    """The queue of ``message_class`` as a DataFrame: the row columns, then the message's fields.

    ``options`` are the ``nexus`` data source's read options (``status``, ``min_id``, ``updated_from``,
    ``partitions``, ...). Read with Spark's JDBC source where the session has the database's driver, else (SQLite,
    no driver, a field of JSON text) with the ``nexus`` data source.
    """
    message_class = registry.resolve(message_class)
    given = {key: str(value) for key, value in options.items()} | {"queue": message_class.queue_name()}
    narrowed = read_options(given)
    register(spark)
    try:
        check_readable(message_class)
        jdbc = jvm_connection(spark, message_class.queue_options.database)
    except NoJvmPath as exc:
        logger.info("Queue %s is read by the nexus data source: %s", given["queue"], exc, extra={"action": "read"})
        return spark.read.format("nexus").options(**given).load()
    return jdbc_read(spark, jdbc, message_class, narrowed)


def check_readable(message_class: type[QueueMessage]) -> None:
    """Raise :class:`NoJvmPath` if a field of ``message_class`` reads as JSON text."""
    for column in spark_schema(message_class).fields:
        if is_json(column) or holds_json(column.dataType):
            raise NoJvmPath(
                f"field {column.name} of {message_class.__qualname__} reads as JSON text, whose canonical form "
                "only Python writes."
            )


def jdbc_read(spark: SparkSession, jdbc: Jdbc, message_class: type[QueueMessage], options: ReadOptions) -> DataFrame:
    """The rows of the queue that ``options`` ask for, read with Spark's JDBC source through ``jdbc``."""
    items = message_class.queue_items().filter(narrowing(options))
    table = jvm_rows(items, [*(column.name for column in ROW_COLUMNS), "message"], text=TEXT_COLUMNS, prefix=RAW)
    table_df = partitioned_read(spark, jdbc, table, RAW + "id", id_bounds(items), options.partitions)
    types = {field.name: field.dataType for field in table_df.schema.fields}
    columns = row_columns(message_class)
    rows = [_row_column(name, column, types[RAW + column.name]) for name, column in columns.items()]
    struct = StructType([message_field(key, field) for key, field in message_keys(message_class).items()])
    # The JSON parsed once a row, in a projection of its own: fields taken from one from_json in the same
    # projection would each parse the whole text again (seven parses a row for a class of seven fields).
    parsed = F.from_json(F.col(RAW + "message"), struct, {"timeZone": "UTC"}).alias(PARSED)
    keys = F.json_object_keys(F.col(RAW + "message")).alias(KEYS)  # which fields the JSON holds, for the defaults
    once = table_df.select(*rows, keys, parsed)
    return once.select(*columns, *_message_fields(message_class, struct))


def partitioned_read(
    spark: SparkSession,
    jdbc: Jdbc,
    table: str,
    id_column: str,
    bounds: tuple[int, int] | None,
    partitions: int | None = None,
) -> DataFrame:
    """Spark's JDBC read of ``table`` (a table's name or a subquery), partitioned on the integer ``id_column``
    between ``bounds`` (the smallest and largest id; one partition when None) in ``partitions`` (by default the
    session's default parallelism), :data:`FETCH_ROWS` fetched at a time."""
    reader = spark.read.format("jdbc").options(**jdbc.options(dbtable=table, fetchsize=FETCH_ROWS))
    if bounds is not None:
        first, last = bounds
        reader = reader.options(
            partitionColumn=id_column,
            lowerBound=str(first),
            upperBound=str(last + 1),
            numPartitions=str(partitions or spark.sparkContext.defaultParallelism),
        )
    return reader.load()


def _row_column(name: str, column: StructField, read_as: DataType) -> Column:
    """A row column as the read gives it; a cast only where the database's type is another (MariaDB's attempts are
    unsigned): a filter on a cast is not pushed into the SQL."""
    raw = F.col(RAW + column.name)
    if isinstance(column.dataType, TimestampType):
        raw = F.timestamp_micros(F.unix_micros(raw))  # an expression Spark does not push into the SQL
    elif read_as != column.dataType:
        raw = raw.cast(column.dataType)
    return raw.alias(name)


def _message_fields(message_class: type[QueueMessage], struct: StructType) -> Iterator[Column]:
    """Each message field of the parsed JSON (times without an offset in UTC); a field the JSON lacks as its
    default, as the ``nexus`` data source reads it."""
    keys, parsed = F.col(KEYS), F.col(PARSED)
    defaults = RowMaker(message_class, struct).defaults_to_fill
    for column in struct.fields:
        value = parsed[column.name]
        if column.name in defaults:
            default = F.from_json(F.lit(json.dumps({column.name: defaults[column.name]})), StructType([column]))
            present = F.array_contains(keys, column.name)
            value = F.when(present, value).otherwise(default[column.name])
        yield value.alias(column.name)
