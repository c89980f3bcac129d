"""Reading a queue as a DataFrame: its id range split into partitions, each read in chunks of ids.

Planning reads only the smallest and largest id (an index's two ends), never counts the rows. On
PostgreSQL a chunk comes as JSON lines the database writes, parsed into Arrow in bulk
(:mod:`.lines`); elsewhere, or for a chunk the bulk parser cannot read as the per-row path would,
it is read in pages of rows made value by value (:class:`RowMaker`).

Spark's filters are not pushed down: Spark 4.3 keeps the read planned with one query's pushed
filters on the loaded DataFrame and reuses it for its later queries that push none, which would
then miss rows. The read options narrow a read instead (:func:`narrowing`): they belong to the
loaded DataFrame, so every query of it reads the same rows.

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
from django.db.models import Q
from pydantic_core import PydanticUndefined, to_jsonable_python
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ...backends.lines import json_lines, writes_json_lines
from ...exceptions import InvalidArgument
from ...registry import registry
from .executors import DjangoSetup, django_ready
from .lines import BulkParser, _Unparsed
from .options import ReadOptions
from .schema import ROW_COLUMNS, holds_json, is_json, message_keys, row_columns
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
"""Rows fetched per query of the per-row path."""
CHUNK = 50_000
"""Ids read per chunk: what a partition holds in memory at a time, as JSON lines then Arrow."""


@dataclass(frozen=True)
class IdRange(InputPartition):
    """The rows of one partition: ids from ``first`` to ``last``, both included."""

    first: int
    last: int


@dataclass
class QueueReader(DataSourceReader):
    """Reads a queue's rows with the ids it holds when planned, one partition per id range."""

    options: ReadOptions
    schema: StructType
    django: DjangoSetup | None

    @classmethod
    def plan(cls, options: ReadOptions, schema: StructType, django: DjangoSetup | None) -> QueueReader:
        """A reader of the queue ``options`` name (on the driver; no query yet)."""
        RowMaker(registry.get(options.queue), schema)  # an unknown column fails here rather than in every task
        return cls(options, schema, django)

    def partitions(self) -> list[IdRange]:
        """The ids of the rows read, from the smallest to the largest, in ranges of equal width."""
        with django_ready(self.django):
            bounds = id_bounds(registry.get(self.options.queue).queue_items().filter(narrowing(self.options)))
        if bounds is None:
            return [IdRange(1, 0)]
        first, last = bounds
        return id_ranges(first, last, self.options.partitions or default_partitions(last - first + 1))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one id range as Arrow batches of the schema, one per chunk or page (in a Spark task)."""
        assert isinstance(partition, IdRange)
        arrow = to_arrow_schema(self.schema, timezone="UTC")
        with django_ready(self.django):
            message_class = registry.get(self.options.queue)
            maker = RowMaker(message_class, self.schema)
            items = message_class.queue_items().filter(narrowing(self.options))
            bulk = BulkParser.of(arrow, frozenset(maker.defaults)) if maker.bulk else None
            if not writes_json_lines(items.db):
                bulk = None
            for chunk in chunks(partition):
                batch = bulk_batch(bulk, items, chunk, maker) if bulk is not None else None
                if batch is not None:
                    yield batch
                else:
                    yield from row_batches(items, chunk, maker, arrow)


def narrowing(options: ReadOptions) -> Q:
    """The rows a read's options ask for."""
    rows = Q()
    if options.statuses:
        rows &= Q(status__in=options.statuses)
    if options.min_id is not None:
        rows &= Q(id__gte=options.min_id)
    if options.max_id is not None:
        rows &= Q(id__lte=options.max_id)
    for column, (start, end) in options.times.items():
        if start is not None:
            rows &= Q(**{f"{column}__gte": start})
        if end is not None:
            rows &= Q(**{f"{column}__lt": end})
    return rows


def id_bounds(items: QueueItemQuerySet) -> tuple[int, int] | None:
    """The smallest and largest id of ``items`` (an index's two ends: no row is counted); None when there are none."""
    first = items.order_by("id").values_list("id", flat=True).first()
    last = items.order_by("-id").values_list("id", flat=True).first()
    return None if first is None or last is None else (first, last)


def chunks(ids: IdRange, width: int = CHUNK) -> Iterator[IdRange]:
    """``ids`` in ranges of ``width`` ids."""
    for first in range(ids.first, ids.last + 1, width):
        yield IdRange(first, min(first + width - 1, ids.last))


def bulk_batch(parser: BulkParser, items: QueueItemQuerySet, ids: IdRange, maker: RowMaker) -> pa.RecordBatch | None:
    """The rows in ``ids`` read in bulk; None for the per-row path to read them (too many columns for the
    database's JSON lines, or a value the bulk parser would not read as the per-row path does)."""
    rows = items.filter(id__gte=ids.first, id__lte=ids.last)
    lines = json_lines(rows, maker.row_columns, bool(maker.defaults), maker.defaults_to_fill)
    if lines is None:
        return None
    try:
        return parser.batch(lines)
    except _Unparsed:
        return None  # the per-row path makes null what does not fit


def row_batches(items: QueueItemQuerySet, ids: IdRange, maker: RowMaker, arrow: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows in ``ids`` made value by value, a page per Arrow batch."""
    rows = pages(items, ids, maker.columns)
    while page := [maker.row(row) for row in islice(rows, PAGE)]:
        columns = zip(*page, strict=True)
        yield pa.RecordBatch.from_arrays(
            [pa.array(values, type=column.type) for values, column in zip(columns, arrow, strict=True)], schema=arrow
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
        self.row_columns: dict[str, str] = {}
        """The schema's row columns: their name to the table's column."""
        self.defaults: dict[str, Any] = {}
        """The schema's message fields: their key to the JSON data a message lacking it reads as."""
        self.bulk = not any(holds_json(column.dataType) or is_json(column) for column in schema.fields)
        """Does the bulk path read the schema as this class does? Not for JSON text, nor for a row column
        given another type than its own."""
        own = {column.name: column.dataType for column in ROW_COLUMNS}
        for column in schema.fields:
            if column.name in rows:
                name = rows[column.name].name
                self.makers.append((self._fetch(name), "", None, column_converter(column)))
                self.row_columns[column.name] = name
                self.bulk = self.bulk and own[name] == column.dataType
            elif column.name in keys:
                self.message = self._fetch("message")
                default = _default(keys[column.name])
                self.makers.append((self.message, column.name, default, column_converter(column)))
                self.defaults[column.name] = default
            else:
                queue, known = message_class.queue_name(), ", ".join([*rows, *keys])
                raise InvalidArgument(f"Queue {queue!r} has no column {column.name}; it has {known}.")

    @property
    def defaults_to_fill(self) -> dict[str, Any]:
        """The defaults a message lacking their key reads as, but those that read as null anyway."""
        return {key: default for key, default in self.defaults.items() if default is not None}

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
