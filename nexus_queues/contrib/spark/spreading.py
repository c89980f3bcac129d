"""A DataFrame of few partitions spread over more, its rows kept in their order.

Of several rows of one id in a sync, the last wins: the one in the highest partition, and of those
the last in it. A shuffle (``repartition``) would mix the rows; ranges of the row order keep it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ORDER = "nexus_queues_row_order"
"""The column holding a row's place in the input while it is spread (dropped after)."""


def spread(df: DataFrame, partitions: int) -> DataFrame:
    """``df`` in ``partitions`` partitions of consecutive rows, in order; ``df`` itself when it has that many."""
    if df.rdd.getNumPartitions() >= partitions:
        return df
    # monotonically_increasing_id grows with the partition and the row within it: the input's order.
    ordered = df.withColumn(ORDER, F.monotonically_increasing_id())
    return ordered.repartitionByRange(partitions, ORDER).sortWithinPartitions(ORDER).drop(ORDER)
