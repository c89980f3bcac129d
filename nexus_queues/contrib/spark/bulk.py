"""A batch's messages validated and written as canonical JSON a batch at a time, without a Python object per value.

The batch's columns are written as JSON text in the class's field order by Arrow's kernels
(:mod:`.columnar`); pydantic validates the whole batch's JSON at once (``TypeAdapter(list[cls]).validate_json``)
and writes it back (``dump_json``): the two texts are equal, byte for byte, or the batch takes the per-row path.
So each message is one the class accepts, and its stored text (the same column written with sorted keys) is the
canonical JSON :func:`~nexus_queues.serialization.canonical_json` writes for it.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import TypeAdapter, ValidationError

from ...messages import QueueMessage
from .columnar import ColumnWriter, Unsupported, plan_message

logger = logging.getLogger("nexus_queues.spark")


class BatchValidator:
    """Validates Arrow batches of one message class whole, where its fields and the batch's columns allow."""

    def __init__(self, message_class: type[QueueMessage], placing: tuple[str, ...]) -> None:
        self.message_class = message_class
        self.placing = frozenset(placing)
        self.adapter = TypeAdapter(list[message_class])  # type: ignore[valid-type]
        self.writers: dict[pa.Schema, ColumnWriter | None] = {}

    def writer(self, schema: pa.Schema) -> ColumnWriter | None:
        """The writer of batches of ``schema`` as the class's JSON, or None when it takes the per-row path."""
        if schema not in self.writers:
            try:
                self.writers[schema] = plan_message(schema, self.message_class.__pydantic_core_schema__, self.placing)
            except Unsupported as exc:
                self.writers[schema] = None
                logger.info("%s is validated row by row: %s.", self.message_class.__qualname__, exc)
        return self.writers[schema]

    def messages(self, batch: pa.RecordBatch) -> tuple[list[QueueMessage], list[str]] | None:
        """The batch's messages and their canonical JSON texts; None when the batch takes the per-row path
        (a row the class refuses included: that path tells why)."""
        writer = self.writer(batch.schema)
        if writer is None or not batch.num_rows:
            return None
        fields = [field for field in batch.schema if field.name not in self.placing]
        columns = [batch.column(field.name) for field in fields]
        try:
            declared, canonical = writer(pa.StructArray.from_arrays(columns, fields=fields))
        except Unsupported:
            return None
        payload = _json_array(declared)
        try:
            messages = self.adapter.validate_json(payload)
        except ValidationError:
            return None
        if self.adapter.dump_json(messages, by_alias=True) != payload:
            return None
        return messages, canonical.to_pylist()


def _json_array(texts: pa.Array) -> bytes:
    """``texts`` (JSON values) as one JSON array."""
    whole = pa.LargeListArray.from_arrays(pa.array([0, len(texts)], pa.int64()), pc.cast(texts, pa.large_string()))
    return b"[" + pc.binary_join(whole, pa.scalar(",", pa.large_string()))[0].as_buffer().to_pybytes() + b"]"
