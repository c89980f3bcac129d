"""The writers Spark ships to its processes: all or nothing, exactly once.

Executors stage their rows under a token per task; the driver's commit merges the staged rows of the
tasks Spark committed into the queue in one transaction, and an abort throws them away. These
objects are unpickled before Django is set up, so what needs models is imported once it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from .executors import DjangoSetup, django_ready
from .options import WriteOptions


@dataclass
class Staged(WriterCommitMessage):
    """What one task staged: its token, how many of its rows were messages and rejects, and its stream's query id."""

    token: int
    messages: int
    rejects: int
    query: str = ""
    """Spark's id of the streaming query (the same for every run from one checkpoint); blank for a batch write."""
    partition: int = 0
    """The Spark partition the task wrote."""


def _staged(messages: list[WriterCommitMessage | None]) -> list[Staged]:
    return [message for message in messages if isinstance(message, Staged)]


@dataclass
class SyncWriter(DataSourceArrowWriter):
    """A batch write: one staging table and one sync record for the whole DataFrame."""

    options: WriteOptions
    django: DjangoSetup | None
    table: str
    sync_id: int

    @classmethod
    def start(cls, options: WriteOptions, django: DjangoSetup | None) -> SyncWriter:
        """Create the staging table and the sync's record (on the driver)."""
        with django_ready(django):
            from . import merging

            table, sync_id = merging.begin(options)
        return cls(options, django, table, sync_id)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Staged:
        with django_ready(self.django):
            from . import merging

            return merging.stage(self.options, self.table, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        with django_ready(self.django):
            from . import merging

            merging.commit(self.options, self.table, self.sync_id, merging.Merge.of(_staged(messages)))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        with django_ready(self.django):
            from . import merging

            merging.abort(self.options, self.table, self.sync_id)


@dataclass
class StreamWriter(DataSourceStreamArrowWriter):
    """A streaming write: each micro-batch merged as a batch write is, its id recorded in the same transaction."""

    options: WriteOptions
    django: DjangoSetup | None
    table: str

    @classmethod
    def start(cls, options: WriteOptions, django: DjangoSetup | None) -> StreamWriter:
        """Create the stream's staging table (on the driver)."""
        with django_ready(django):
            from . import merging

            return cls(options, django, merging.begin_stream(options))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Staged:
        with django_ready(self.django):
            from . import merging

            return merging.stage(self.options, self.table, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        with django_ready(self.django):
            from . import merging

            merging.commit_batch(self.options, self.table, batchId, _staged(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        with django_ready(self.django):
            from . import merging

            merging.abort_batch(self.options, self.table)
