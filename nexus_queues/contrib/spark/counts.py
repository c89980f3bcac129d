"""What a sync did with a DataFrame's rows, as its record holds it."""

from __future__ import annotations

from dataclasses import dataclass

from .models import Sync


@dataclass(frozen=True)
class SyncCounts:
    """What a sync did with the DataFrame's rows."""

    new: int
    changed: int
    unchanged: int
    scheduled: int
    rejected: int
    superseded: int
    batch: int | None = None
    """The id of the :class:`~nexus_queues.models.Batch` of the messages it made Pending; None when it wrote none."""

    @classmethod
    def of(cls, record: Sync) -> SyncCounts:
        """The counts a sync's record holds."""
        return cls(
            record.new,
            record.changed,
            record.unchanged,
            record.scheduled,
            record.rejected,
            record.superseded,
            record.queue_batch_id,
        )
