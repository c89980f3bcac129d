"""Staging a DataFrame in Spark's JVM: the message class's column expressions validate each row and write its
canonical JSON and hash, Spark's JDBC reader brings the queue's stored (message id, hash) pairs to leave out the
unchanged rows, and Spark's JDBC writer inserts the others into the staging table. No Python worker reads a row.

Each row's position is the one the Python path gives it: its partition's index in the bits above
:data:`~.rows.POSITION_BITS`, its index in the partition below.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from ...backends.jdbc import Jdbc
from ...messages import QueueMessage
from .compiling import PLACED_COLUMNS, message_key, select_checked, select_keyed, session_time_zone
from .jdbc_reading import partitioned_read
from .reading import id_bounds
from .rows import POSITION_BITS

STAGED = "nexus_staged_"
"""Before the names of the columns the staging computes, so that none meets a column of the DataFrame."""
TABLE_COLUMNS = ("message_id", "message", "message_hash", *PLACED_COLUMNS)
"""The staging table's columns that :func:`~.compiling.select_checked` may give (the first three always)."""
WRITE_BATCH_ROWS = 10_000
"""Rows the JDBC writer sends in one batch (rewritten by the driver into multi-row inserts)."""
BROADCAST_PAIRS = 1_000_000
"""A queue of at most this many rows has its (id, hash) pairs sent to every task, so that the DataFrame's rows are
compared where they are; a bigger queue's pairs meet them in a shuffle by id (each row carried with its JSON)."""
REPEATS_KEPT = 10_000
"""At most this many ids given by several rows of a DataFrame are listed for the comparison where the rows are."""
_INDEX_BITS = 33
"""``monotonically_increasing_id()`` holds the row's index in its partition in its lowest 33 bits."""


@dataclass(frozen=True)
class JvmStaged:
    """What Spark staged, and what it counted and left out."""

    rows: int
    """The DataFrame's rows."""
    rejected: int
    unchanged: int
    """Rows whose id and JSON the queue held, left out of the staging table (the newest row of each such id)."""
    superseded: int
    """Older rows of those ids, left out with them."""

    @property
    def written(self) -> int:
        """Rows written into the staging table (rejects included), each once."""
        return self.rows - self.unchanged - self.superseded


def stage_in_jvm(
    df: DataFrame,
    message_class: type[QueueMessage],
    jdbc: Jdbc,
    table: str,
    token: int,
    *,
    skip_unchanged: bool,
) -> JvmStaged:
    """Write the staged rows of ``df`` under ``token`` into staging table ``table`` with Spark's JDBC writer, in one
    Spark job; with ``skip_unchanged``, only the rows the queue does not hold already (by id and hash)."""
    keyed = _keyed(df, message_class)
    stored = _stored_hashes(df, message_class, jdbc) if skip_unchanged else None
    if stored is None:
        flagged = keyed.withColumn(STAGED + "dropped", F.lit(False)).withColumn(STAGED + "unchanged", F.lit(False))
    elif stored.rows <= BROADCAST_PAIRS and (repeated := _repeated_ids(df, message_class)) is not None:
        flagged = _flag_unchanged_where_they_are(keyed, stored.pairs, repeated)
    else:
        flagged = _flag_unchanged(keyed, stored.pairs)
    compared, checked = Observation(f"nexus_compared_{token}"), Observation(f"nexus_checked_{token}")
    kept = flagged.observe(
        compared,
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(_staged("dropped"), 1)).alias("dropped"),
        F.count(F.when(_staged("unchanged"), 1)).alias("unchanged"),
    ).where(~_staged("dropped"))
    rows = _checked(kept, df, message_class).observe(checked, F.count(_staged("errors")).alias("rejected"))
    given = [name for name in TABLE_COLUMNS if STAGED + name in rows.columns]
    staged = rows.select(
        F.lit(token).cast("long").alias("token"),
        _staged("position").alias("position"),
        *(_staged(name).alias(name) for name in given),  # NULL in a rejected row
        _staged("reject").alias("reject"),
    )
    properties = {**jdbc.properties, "batchsize": str(WRITE_BATCH_ROWS)}
    staged.write.jdbc(jdbc.url, table, mode="append", properties=properties)
    seen = compared.get
    return JvmStaged(seen["rows"], checked.get["rejected"], seen["unchanged"], seen["dropped"] - seen["unchanged"])


def partition_rows(df: DataFrame) -> dict[int, int]:
    """How many rows the partitions before each partition of ``df`` hold (a reject's number in the DataFrame is
    its index in its partition plus this): a second Spark job, run only when a sync has rejects."""
    counts: dict[int, int] = dict(df.groupBy(F.spark_partition_id().alias("partition")).count().collect())
    offsets, total = {}, 0
    for partition in sorted(counts):
        offsets[partition], total = total, total + counts[partition]
    return offsets


def _staged(name: str) -> Column:
    return F.col(STAGED + name)


def _quoted(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _keyed(df: DataFrame, message_class: type[QueueMessage]) -> DataFrame:
    """``df``'s rows with their positions, message ids, JSON and hashes (names under :data:`STAGED`), their checks
    not yet run: a row whose id and JSON the queue holds is counted unchanged, checked or not
    (:func:`~.compiling.select_keyed`)."""
    partition = F.spark_partition_id().cast("long")
    index = F.monotonically_increasing_id() - F.shiftleft(partition, _INDEX_BITS)
    keyed = select_keyed(df, message_class, prefix=STAGED, time_zone=session_time_zone(df.sparkSession))
    return keyed.withColumn(STAGED + "position", F.shiftleft(partition, POSITION_BITS) + index)


def _checked(kept: DataFrame, df: DataFrame, message_class: type[QueueMessage]) -> DataFrame:
    """The ``kept`` rows of :func:`_keyed` checked: their staged columns and rejects
    (:func:`~.compiling.select_checked`)."""
    keep = (*df.columns, STAGED + "position")
    time_zone = session_time_zone(df.sparkSession)
    checked = select_checked(kept, message_class, df.schema, keep, prefix=STAGED, time_zone=time_zone)
    return checked.withColumn(STAGED + "reject", _reject(df.columns))


def _reject(source: list[str]) -> Column:
    """The reject of a row with errors, as the Python path writes it: its position, its values, its errors."""
    row = F.to_json(F.struct(*(_quoted(name) for name in source)), {"ignoreNullFields": "false"})
    text = F.concat(
        F.lit('{"position": '),
        _staged("position").cast("string"),
        F.lit(', "row": '),
        row,
        F.lit(', "errors": '),
        _staged("errors"),
        F.lit("}"),
    )
    return F.when(_staged("errors").isNotNull(), text)


@dataclass(frozen=True)
class _Stored:
    pairs: DataFrame
    """The queue's (message id, hash) pairs, as Spark's JDBC reader reads them."""
    rows: int
    """At most this many: the span of the table's ids."""


def _stored_hashes(df: DataFrame, message_class: type[QueueMessage], jdbc: Jdbc) -> _Stored | None:
    """The queue's stored (message id, hash) pairs read by Spark's JDBC reader, partitioned on the table's id (the
    bounds from one query, as many partitions as the session's default parallelism); None for an empty queue."""
    bounds = id_bounds(message_class.queue_items())
    if bounds is None:
        return None
    table = message_class.queue_model._meta.db_table
    pairs = partitioned_read(df.sparkSession, jdbc, table, "id", bounds)
    chosen = pairs.select(
        pairs["message_id"].alias(STAGED + "stored_id"), pairs["message_hash"].alias(STAGED + "stored_hash")
    )
    first, last = bounds
    return _Stored(chosen, last - first + 1)


def _repeated_ids(df: DataFrame, message_class: type[QueueMessage]) -> list[str] | None:
    """The ids that more than one row of ``df`` gives (a Spark job that reads only the id's column); None when there
    are more than :data:`REPEATS_KEPT` of them."""
    key = F.expr(message_key(message_class, df.schema))
    found = df.groupBy(key.alias("key")).count().where("count > 1").select("key").limit(REPEATS_KEPT + 1).collect()
    return None if len(found) > REPEATS_KEPT else [row.key for row in found if row.key is not None]


def _flag_unchanged_where_they_are(keyed: DataFrame, stored: DataFrame, repeated: list[str]) -> DataFrame:
    """:func:`_flag_unchanged` with the stored pairs sent to every task (no shuffle of the DataFrame's rows): a row
    is unchanged when the queue holds its id with its hash, unless its id is one of ``repeated``, whose rows are all
    staged for the merge to tell the newest (as the Python path stages them)."""
    key = _staged("message_id")
    joined = keyed.join(F.broadcast(stored), key == stored[STAGED + "stored_id"], "left")
    same = key.isNotNull() & (_staged("message_hash") == _staged("stored_hash"))
    if repeated:
        same = same & ~key.isin(repeated)
    dropped = F.coalesce(same, F.lit(False))
    return joined.withColumn(STAGED + "dropped", dropped).withColumn(STAGED + "unchanged", _staged("dropped"))


def _flag_unchanged(keyed: DataFrame, stored: DataFrame) -> DataFrame:
    """``keyed`` with the flags ``dropped`` (a row of an id whose newest row the queue holds, hash and all: the
    merge would not write it) and ``unchanged`` (that newest row: the merge would count it unchanged)."""
    key = _staged("message_id")
    joined = keyed.join(stored, key == stored[STAGED + "stored_id"], "left")
    # The merge writes the newest row of an id (its greatest position): an id is unchanged when that row's hash is
    # the stored one, and then none of its rows is staged. The join already clusters the rows by id.
    newest = F.max(F.struct(_staged("position"), _staged("message_hash"))).over(Window.partitionBy(key))
    with_newest = joined.withColumn(STAGED + "newest", newest)
    newest_row = _staged("newest")
    dropped = key.isNotNull() & (newest_row[STAGED + "message_hash"] == _staged("stored_hash"))
    return with_newest.withColumn(STAGED + "dropped", F.coalesce(dropped, F.lit(False))).withColumn(
        STAGED + "unchanged", _staged("dropped") & (_staged("position") == newest_row[STAGED + "position"])
    )
