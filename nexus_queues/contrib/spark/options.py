"""The options of the ``nexus`` data source, checked once on the driver, before Spark starts a task."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ...exceptions import InvalidArgument
from ...limits import MAX_INTEGER, check_label
from ...status import validate_status

WRITE_OPTIONS = (
    "queue",
    "rejects",
    "max_rejects",
    "sync",
    "stream",
    "on_complete",
    "on_complete_message",
    "batch_label",
)
READ_OPTIONS = (
    "queue",
    "partitions",
    "status",
    "min_id",
    "max_id",
    *(f"{column}_{end}" for column in ("created", "updated", "process") for end in ("from", "to")),
)
TIME_COLUMNS = {"created": "created_at", "updated": "updated_at", "process": "process_at"}
"""The row columns a read narrows by time, by the start of their options' names."""
SPARKS_OWN = ("path", "checkpointlocation")
"""Options Spark itself may pass along: ignored."""


@dataclass(frozen=True)
class WriteOptions:
    """How to write a DataFrame into a queue."""

    queue: str
    rejects: str | None = None
    """Where rejected rows go (Parquet, or JSON lines when the path ends in .json or .jsonl)."""
    max_rejects: int | None = None
    """How many rejected rows fail the sync beyond; with no ``rejects`` path, 0."""
    sync: int | None = None
    """The :class:`~.models.Sync` record to fill (:func:`~.syncing.sync` makes one); a new one when None."""
    stream: str = ""
    """A stream's name, under which its batch ids are recorded (default: the queue's name)."""
    on_complete: str = ""
    """The queue of the completion message of the sync's batch (blank: none)."""
    on_complete_message: dict[str, Any] = field(default_factory=dict)
    """The completion message's fields (all but ``batch``), from JSON."""
    batch_label: str = ""
    """The label of the sync's batch (default: "Spark sync #<id>")."""

    @property
    def stream_name(self) -> str:
        """The name a stream's staging table and batch records go by."""
        return self.stream or self.queue

    @property
    def rejects_allowed(self) -> int | None:
        """How many rejects the sync may have, None for any."""
        return self.max_rejects if self.max_rejects is not None or self.rejects else 0


def write_options(options: Mapping[str, Any]) -> WriteOptions:
    """The write options given to the data source, or :class:`InvalidArgument` naming the bad one."""
    given = _known(options, WRITE_OPTIONS)
    return WriteOptions(
        queue=_queue(given),
        rejects=_rejects(given),
        max_rejects=_count(given, "max_rejects"),
        sync=_count(given, "sync", minimum=1),
        stream=given.get("stream", ""),
        on_complete=given.get("on_complete", ""),
        on_complete_message=_json_object(given, "on_complete_message"),
        batch_label=check_label("Option batch_label", given.get("batch_label", "")),
    )


def _rejects(given: dict[str, str]) -> str | None:
    """The rejects path, which the driver writes only once every row is staged: refused now if it cannot be."""
    path = given.get("rejects") or None
    if path is not None and not _writable(path):
        raise InvalidArgument(
            f"Option rejects {path!r} cannot be written: give the path of a file in a folder this process may "
            "write or create."
        )
    return path


def _writable(path: str) -> bool:
    if "\x00" in path or Path(path).is_dir():
        return False
    folder = Path(path).absolute().parent
    while not folder.exists():  # made when the rejects are written
        folder = folder.parent
    return folder.is_dir() and os.access(folder, os.W_OK) and (not Path(path).exists() or os.access(path, os.W_OK))


def _json_object(given: dict[str, str], name: str) -> dict[str, Any]:
    if name not in given:
        return {}
    try:
        value = json.loads(given[name])
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise InvalidArgument(
            f'Option {name} must be a JSON object, as {{"note": "export prices"}}; got {given[name]!r}.'
        )
    return value


@dataclass(frozen=True)
class ReadOptions:
    """What to read of a queue, and in how many partitions."""

    queue: str
    partitions: int | None = None
    """None: as many as the queue's ids suggest."""
    statuses: tuple[str, ...] = ()
    """Only rows in one of these statuses (all when empty)."""
    min_id: int | None = None
    max_id: int | None = None
    """Only rows whose id is in this range, both ends included."""
    times: dict[str, tuple[datetime | None, datetime | None]] = field(default_factory=dict)
    """Only rows whose time column (its database name) is from the first time included to the second excluded."""


def read_options(options: Mapping[str, str]) -> ReadOptions:
    """The read options given to the data source, or :class:`InvalidArgument` naming the bad one."""
    given = _known(options, READ_OPTIONS)
    times = {
        column: (_time(given, f"{name}_from"), _time(given, f"{name}_to")) for name, column in TIME_COLUMNS.items()
    }
    return ReadOptions(
        queue=_queue(given),
        partitions=_count(given, "partitions", minimum=1),
        statuses=tuple(validate_status(s.strip()) for s in given.get("status", "").split(",") if s.strip()),
        min_id=_count(given, "min_id"),
        max_id=_count(given, "max_id"),
        times={column: ends for column, ends in times.items() if ends != (None, None)},
    )


def _time(given: dict[str, str], name: str) -> datetime | None:
    if name not in given:
        return None
    try:
        value = datetime.fromisoformat(given[name])
    except ValueError:
        value = None
    if value is None or value.tzinfo is None:
        raise InvalidArgument(
            f"Option {name} must be a time in ISO 8601 with its offset, as 2026-03-02T00:00:00+00:00; "
            f"got {given[name]!r}."
        )
    return value


def _known(options: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    given = {key.lower(): str(value) for key, value in options.items()}
    unknown = sorted(set(given) - set(names) - set(SPARKS_OWN))
    if unknown:
        known = ", ".join(names)
        raise InvalidArgument(f"Unknown option {', '.join(unknown)} of the nexus data source; it takes {known}.")
    return given


def _queue(given: dict[str, str]) -> str:
    if not given.get("queue"):
        raise InvalidArgument('The nexus data source needs the queue: .option("queue", "<queue name>").')
    return given["queue"]


def _count(given: dict[str, str], name: str, minimum: int = 0) -> int | None:
    if name not in given:
        return None
    try:
        value = int(given[name])
    except ValueError:
        value = -1
    if not minimum <= value <= MAX_INTEGER:
        raise InvalidArgument(
            f"Option {name} must be a whole number from {minimum} to {MAX_INTEGER}, got {given[name]!r}."
        )
    return value
