"""A DataFrame's rows as staged messages: validated by the message class, or rejected with the reason per field."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pyarrow as pa
from pydantic import ValidationError

from ...enqueueing import Placement, enqueue_row, resolve_placement
from ...exceptions import MessageTooLarge, NexusQueuesError
from ...messages import QueueMessage, message_id_of
from ...serialization import MessageEncoder, json_hash
from ...staging import UNLIMITED, Budget, StagedRow
from .bulk import BatchValidator

PLACEMENT_COLUMNS = ("process_at", "expires_at", "status", "headers")
"""Optional columns that place the message rather than fill it (unless the message class has such a field)."""
POSITION_BITS = 40
"""A partition's rows are numbered below 2**40; its index fills the bits above."""
PREVIEW_CHARACTERS = 200
"""A row too large to store is rejected with each longer value told by its size, so that the reject fits."""


class RowStager:
    """Turns the Arrow batches of one partition into staged rows under one token."""

    def __init__(
        self,
        message_class: type[QueueMessage],
        token: int,
        partition: int,
        now: datetime,
        budget: Budget = UNLIMITED,
        *,
        whole_batches: bool = True,
    ) -> None:
        """``whole_batches``: validate a batch at a time where the class and columns allow (:mod:`.bulk`), else
        always row by row (each stores the same rows: the property tests compare them)."""
        self.message_class = message_class
        self.budget = budget
        self.token = token
        self.now = now
        self.next_position = partition << POSITION_BITS
        self.placing = tuple(c for c in PLACEMENT_COLUMNS if c not in message_class.model_fields)
        self.unplaced = resolve_placement(None, None, None, None, None)
        self.rejected = 0
        self.row_by_row = 0
        """How many rows took the per-row path."""
        self.bulk = BatchValidator(message_class, self.placing) if whole_batches else None

    def rows(self, batch: pa.RecordBatch) -> list[StagedRow]:
        """The batch's rows, staged: messages, and rejects holding their reason."""
        staged = self._whole(batch)
        if staged is not None:
            self.next_position += len(staged)
            return staged
        self.row_by_row += batch.num_rows
        plain = _plain_maps(batch.schema)
        staged = []
        for record in batch.to_pylist():
            if plain:
                record = {name: plain(name, value) for name, value in record.items()}
            staged.append(self._row(record, self.next_position))
            self.next_position += 1
        return staged

    def _whole(self, batch: pa.RecordBatch) -> list[StagedRow] | None:
        """The batch's rows staged a batch at a time (:mod:`.bulk`), or None when it takes the per-row path:
        a row refused, a placement column refused or a row too large for the budget included."""
        found = self.bulk.messages(batch) if self.bulk else None
        if found is None:
            return None
        messages, texts = found
        count = len(texts)
        placements = [self.unplaced] * count
        columns = {c: batch.column(c) for c in self.placing if c in batch.schema.names}
        placed = [c for c, column in columns.items() if column.null_count < count]
        try:
            if placed:
                values = {c: columns[c].to_pylist() for c in placed}
                for index in range(count):
                    placing = {c: values[c][index] for c in placed}
                    if any(v is not None for v in placing.values()):
                        placements[index] = self._placement(**placing)
            ids = [message_id_of(message) for message in messages]
        except (_PlacementError, NexusQueuesError):
            return None
        start, token = self.next_position, self.token
        staged = [
            StagedRow(
                token,
                start + index,
                ids[index],
                text,
                json_hash(text),
                p.headers,
                p.status,
                p.process_at,
                p.expires_at,
                None,
            )
            for index, (text, p) in enumerate(zip(texts, placements, strict=True))
        ]
        try:
            self.budget.check(staged)
        except MessageTooLarge:
            return None
        return staged

    def _row(self, record: dict[str, Any], position: int) -> StagedRow:
        values = dict(record)
        placing = {column: values.pop(column, None) for column in self.placing}
        errors = []
        try:
            placement = self._placement(**placing) if any(v is not None for v in placing.values()) else self.unplaced
        except _PlacementError as exc:
            errors.append(exc.error)
            placement = self.unplaced
        try:
            message = self.message_class.model_validate(values)
            row = enqueue_row(message, placement, self.now)
        except ValidationError as exc:
            errors += [{"field": _field(e["loc"]), "reason": e["msg"]} for e in exc.errors()]
        except NexusQueuesError as exc:
            errors.append({"field": getattr(exc, "field", "") or "(message)", "reason": str(exc)})
        if errors:
            return self._reject(position, record, errors)
        staged = StagedRow(self.token, position, row.message_id, row.message, row.message_hash, *row[3:7], None)
        try:
            self.budget.check([staged])
        except MessageTooLarge as exc:
            return self._reject(position, _preview(record), [{"field": "(message)", "reason": str(exc)}])
        return staged

    def _reject(self, position: int, record: dict[str, Any], errors: list[dict[str, str]]) -> StagedRow:
        self.rejected += 1
        reject = json.dumps({"position": position, "row": record, "errors": errors}, cls=_Encoder)
        return StagedRow(self.token, position, None, None, None, None, None, None, None, reject)

    def _placement(
        self, process_at: Any = None, expires_at: Any = None, status: Any = None, headers: Any = None
    ) -> Placement:
        """The placement the row's columns ask for, each column checked by enqueue's rules."""
        try:
            return resolve_placement(process_at, None, status, expires_at, headers)
        except NexusQueuesError as exc:
            together = exc
        # Only a refused row pays for finding the column to blame: the first refused alone, else the pair.
        alone = {
            "process_at": (process_at, None, None, None, None),
            "status": (None, None, status, None, None),
            "expires_at": (None, None, None, expires_at, None),
            "headers": (None, None, None, None, headers),
        }
        for column, options in alone.items():
            try:
                resolve_placement(*options)
            except NexusQueuesError as exc:
                raise _PlacementError(column, str(exc)) from exc
        raise _PlacementError("status", str(together)) from together  # a status and a time together


class _Encoder(MessageEncoder):
    """Writes any value a rejected row holds: what JSON lacks, as its text."""

    def default(self, o: Any) -> Any:
        try:
            return super().default(o)
        except TypeError:
            return repr(o)


class _PlacementError(Exception):
    def __init__(self, column: str, reason: str) -> None:
        self.error = {"field": column, "reason": reason}


def _preview(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with each value longer than :data:`PREVIEW_CHARACTERS` as JSON told by its size instead."""
    sizes = {name: len(json.dumps(value, cls=_Encoder)) for name, value in record.items()}
    return {
        name: value if sizes[name] <= PREVIEW_CHARACTERS else f"({sizes[name]:,} characters of JSON)"
        for name, value in record.items()
    }


def _field(location: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in location) or "(row)"


def _plain_maps(schema: pa.Schema) -> Any:
    """A function making Arrow's maps (lists of pairs) into dicts in a column's values; None without maps."""
    types = {field.name: field.type for field in schema}
    if not any(_has_map(t) for t in types.values()):
        return None
    return lambda name, value: _plain(types[name], value)


def _has_map(arrow_type: pa.DataType) -> bool:
    if pa.types.is_map(arrow_type):
        return True
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _has_map(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return any(_has_map(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    return False


def _plain(arrow_type: pa.DataType, value: Any) -> Any:
    if value is None or not _has_map(arrow_type):
        return value
    if pa.types.is_map(arrow_type):
        return {k: _plain(arrow_type.item_type, v) for k, v in value}
    if pa.types.is_struct(arrow_type):
        fields = {arrow_type.field(i).name: arrow_type.field(i).type for i in range(arrow_type.num_fields)}
        return {k: _plain(fields[k], v) for k, v in value.items()}
    return [_plain(arrow_type.value_type, item) for item in value]
