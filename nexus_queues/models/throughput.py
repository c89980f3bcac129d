"""The per-queue, per-minute counts of finished runs (see :mod:`nexus_queues.throughput`)."""

from __future__ import annotations

from django.db import models


class QueueMinute(models.Model):
    """The finished runs of a queue's job in one minute (by when they finished), or before (the all-time row)."""

    queue = models.CharField(max_length=40)
    minute = models.DateTimeField(help_text="The minute's start (UTC); the epoch for the folded minutes")
    processed = models.PositiveBigIntegerField(default=0)
    errors = models.PositiveBigIntegerField(default=0)
    runs = models.PositiveBigIntegerField(default=0)
    run_seconds = models.FloatField(default=0.0, help_text="The runs' summed time from lease to finish")

    class Meta:
        app_label = "nexus_queues"
        db_table = "nexus_queue_minute"
        constraints = [models.UniqueConstraint(fields=["queue", "minute"], name="nx_queue_minute_unique")]

    def __str__(self) -> str:
        return f"{self.queue} at {self.minute:%Y-%m-%d %H:%M}"
