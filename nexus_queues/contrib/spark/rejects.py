"""Rejected rows written where the user asked: Parquet, or JSON lines for a path ending in .json or .jsonl."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .rows import POSITION_BITS

SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("partition", pa.int32()),
        ("row", pa.string()),
        ("errors", pa.list_(pa.struct([("field", pa.string()), ("reason", pa.string())]))),
    ]
)
"""Per reject: its row's number in the DataFrame (0-based, in Spark's order of partitions and of rows in each),
the Spark partition it was in, the row as JSON, and the reason per field."""
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


def numbered(rejects: Iterable[str], offsets: Mapping[int, int]) -> Iterator[str]:
    """``rejects`` (as a row's stager made them) with their position made the row's number in the DataFrame.

    ``offsets`` holds, per partition, how many rows the partitions before it had.
    """
    for reject in rejects:
        found = json.loads(reject)
        partition, index = divmod(found.pop("position"), 1 << POSITION_BITS)
        yield json.dumps({"position": offsets.get(partition, 0) + index, "partition": partition, **found})


def write_rejects(path: str, rejects: Iterable[str]) -> int:
    """Write ``rejects`` (each the JSON a row's stager made) to ``path``, replacing it; how many."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix.lower() in JSON_SUFFIXES:
        return _write_json_lines(target, rejects)
    return _write_parquet(target, rejects)


def _write_json_lines(target: Path, rejects: Iterable[str]) -> int:
    count = 0
    with target.open("w", encoding="utf-8") as out:
        for reject in rejects:
            out.write(reject + "\n")
            count += 1
    return count


def _write_parquet(target: Path, rejects: Iterable[str]) -> int:
    count, batch = 0, []
    with pq.ParquetWriter(target, SCHEMA) as out:
        for reject in rejects:
            found = json.loads(reject)
            batch.append({**found, "row": json.dumps(found["row"])})
            if len(batch) == 10_000:
                out.write_batch(pa.RecordBatch.from_pylist(batch, schema=SCHEMA))
                count, batch = count + len(batch), []
        out.write_batch(pa.RecordBatch.from_pylist(batch, schema=SCHEMA))
    return count + len(batch)
