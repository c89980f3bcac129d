"""Reading a queue as a DataFrame: its id range split into partitions, each read in pages of ids.

Planning reads only the smallest and largest id (an index's two ends), never counts the rows.
Filters are not pushed down: Spark 4.3 reuses the read planned for one query's pushed filters for
the later unfiltered queries of the same loaded DataFrame (which then miss rows).

The reader is unpickled in Spark's processes before Django is set up there: it reaches the queue
through the registry, which Django's setup fills.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice, pairwise
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pydantic_core import PydanticUndefined, to_jsonable_python
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ...exceptions import InvalidArgument
from ...registry import registry
from .executors import DjangoSetup, django_ready
from .schema import message_keys, row_columns
from .values import Converter, column_converter

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from ...messages import QueueMessage
    from ...models import QueueItemQuerySet

ROWS_PER_PARTITION = 100_000
"""Without a ``partitions`` option, one partition per this many ids: a task of seconds, not milliseconds."""
MAX_PARTITIONS = 64
"""Without a ``partitions`` option, at most this many: each partition read at once holds a database connection."""
PAGE = 2_000
"""Rows fetched per query: what a partition holds in memory at a time."""


@dataclass(frozen=True)
class IdRange(InputPartition):
    """The rows of one partition: ids from ``first`` to ``last``, both included."""

    first: int
    last: int


@dataclass
class QueueReader(DataSourceReader):
    """Reads a queue's rows with the ids it holds when planned, one partition per id range."""

    queue: str
    wanted: int | None
    """The ``partitions`` option; None for one per :data:`ROWS_PER_PARTITION` ids."""
    schema: StructType
    django: DjangoSetup | None

    @classmethod
    def plan(cls, queue: str, partitions: int | None, schema: StructType, django: DjangoSetup | None) -> QueueReader:
        """A reader of ``queue`` in ``partitions`` id ranges (on the driver; no query yet)."""
        RowMaker(registry.get(queue), schema)  # an unknown column fails here rather than in every task
        return cls(queue, partitions, schema, django)

    def partitions(self) -> list[IdRange]:
        """The queue's ids, from its smallest to its largest, in ranges of equal width."""
        with django_ready(self.django):
            items = registry.get(self.queue).queue_items()
            first = items.order_by("id").values_list("id", flat=True).first()
            last = items.order_by("-id").values_list("id", flat=True).first()
        if first is None or last is None:
            return [IdRange(1, 0)]
        return id_ranges(first, last, self.wanted or default_partitions(last - first + 1))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one id range as Arrow batches of the schema, one per page (in a Spark task)."""
        assert isinstance(partition, IdRange)
        # Arrow's own conversion of a page's columns: Spark's, value by value in Python, took longer.
        arrow = to_arrow_schema(self.schema, timezone="UTC")
        with django_ready(self.django):
            message_class = registry.get(self.queue)
            maker = RowMaker(message_class, self.schema)
            rows = pages(message_class.queue_items(), partition, maker.columns)
            while page := [maker.row(row) for row in islice(rows, PAGE)]:
                columns = zip(*page, strict=True)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(values, type=column.type) for values, column in zip(columns, arrow, strict=True)],
                    schema=arrow,
                )


def default_partitions(ids: int) -> int:
    """One partition per :data:`ROWS_PER_PARTITION` ids, at least 1 and at most :data:`MAX_PARTITIONS`."""
    return min(MAX_PARTITIONS, max(1, math.ceil(ids / ROWS_PER_PARTITION)))


def id_ranges(first: int, last: int, count: int) -> list[IdRange]:
    """``first`` to ``last`` in ``count`` ranges of equal width (fewer when there are fewer ids)."""
    width = last - first + 1
    count = min(count, width)
    bounds = [first + width * i // count for i in range(count + 1)]
    return [IdRange(start, end - 1) for start, end in pairwise(bounds)]


class RowMaker:
    """Makes a queue's database rows into rows of ``schema``: row columns, then message fields from its JSON."""

    def __init__(self, message_class: type[QueueMessage], schema: StructType) -> None:
        rows = row_columns(message_class)
        keys = message_keys(message_class)
        self.columns = ["id"]
        """The database columns to fetch, the id first: pages follow it."""
        self.message: int | None = None
        self.makers: list[tuple[int, str, Any, Converter]] = []
        for column in schema.fields:
            if column.name in rows:
                self.makers.append((self._fetch(rows[column.name].name), "", None, column_converter(column)))
            elif column.name in keys:
                self.message = self._fetch("message")
                self.makers.append((self.message, column.name, _default(keys[column.name]), column_converter(column)))
            else:
                queue, known = message_class.queue_name(), ", ".join([*rows, *keys])
                raise InvalidArgument(f"Queue {queue!r} has no column {column.name}; it has {known}.")

    def row(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """The schema's values of one database row (its :attr:`columns`)."""
        message = values[self.message] if self.message is not None else None
        data = message if isinstance(message, dict) else {}
        return tuple(
            convert(data.get(key, default) if key else values[index]) for index, key, default, convert in self.makers
        )

    def _fetch(self, column: str) -> int:
        if column not in self.columns:
            self.columns.append(column)
        return self.columns.index(column)


def _default(field: FieldInfo) -> Any:
    """A field's default as JSON data, for messages stored before the field was added; None when it has none."""
    if field.default_factory is not None and not field.default_factory_takes_validated_data:
        return to_jsonable_python(field.get_default(call_default_factory=True), by_alias=True)
    if field.default is PydanticUndefined:
        return None
    return to_jsonable_python(field.default, by_alias=True)


def pages(
    items: QueueItemQuerySet, ids: IdRange, columns: list[str], size: int = PAGE
) -> Iterator[tuple[Any, ...]]:
    """``columns`` (the id first) of the rows in ``ids``, in id order, ``size`` rows a query: no cursor is held
    between queries, and no engine's client holds more than a page (MySQLdb buffers a whole result)."""
    after = ids.first - 1
    while after < ids.last:
        page = list(items.filter(id__gt=after, id__lte=ids.last).order_by("id").values_list(*columns)[:size])
        yield from page
        if len(page) < size:
            return
        after = page[-1][0]
