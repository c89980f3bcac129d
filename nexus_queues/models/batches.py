"""A batch: a group of one queue's messages, its progress, and the completion it enqueues once all have finished."""

from __future__ import annotations

from typing import Any

from django.db import models


class Batch(models.Model):
    """A group of messages of one queue (each names it in its ``nexus_batch`` header) and its progress.

    The counters change in the transactions that move a member to or from a finished status (Processed,
    Error, Cancelled), so they stay right after Processed rows are deleted; the transaction that brings
    them up to ``total`` records ``completed_at`` and enqueues the completion message, once. None is ever
    negative; housekeeping recounts them from the rows once they stay still (``counted_at``) before completion.
    """

    queue = models.CharField(max_length=40, help_text="The queue its messages are in")
    label = models.CharField(max_length=200, blank=True, help_text="What the batch is, for people")
    total = models.PositiveBigIntegerField(default=0, help_text="Its messages")
    processed = models.PositiveBigIntegerField(
        default=0, help_text="Its messages now Processed (or deleted as processed)"
    )
    error = models.PositiveBigIntegerField(default=0, help_text="Its messages now Error")
    cancelled = models.PositiveBigIntegerField(default=0, help_text="Its messages now Cancelled")
    completion_queue = models.CharField(max_length=40, blank=True, help_text="The queue of its completion message")
    completion_message = models.JSONField(null=True, blank=True, help_text="The completion message, but its batch")
    completion_message_id = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 (None: no identity)
    created_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True, help_text="When it took its last message")
    completed_at = models.DateTimeField(null=True, blank=True, help_text="When its last message finished")
    counted_at = models.DateTimeField(help_text="When its counters last changed, or were recounted from its rows")

    class Meta:
        app_label = "nexus_queues"
        db_table = "nexus_batch"
        verbose_name_plural = "batches"
        ordering = ("-id",)
        indexes = [models.Index(fields=["queue", "completed_at"], name="nx_batch_queue_completed")]

    def __str__(self) -> str:
        return f"{self.queue} batch {self.pk}" + (f" ({self.label})" if self.label else "")

    @property
    def finished(self) -> int:
        """Its messages Processed, Error or Cancelled."""
        return self.processed + self.error + self.cancelled

    @property
    def pending(self) -> int:
        """Its messages not finished yet (waiting, sleeping, leased, abandoned or in a custom status); none when more
        finished than it counted (rows given its header by hand, until the recount)."""
        return max(self.total - self.finished, 0)

    def counts(self) -> dict[str, Any]:
        """Its progress as plain values (the API's, the completion message's)."""
        return {
            "id": self.pk, "queue": self.queue, "label": self.label, "total": self.total, "pending": self.pending,
            "processed": self.processed, "error": self.error, "cancelled": self.cancelled,
            "created_at": self.created_at, "completed_at": self.completed_at,
        }
