"""One row per Spark sync into a queue (and per micro-batch of a stream): what it did, or why it failed."""

from __future__ import annotations

from django.db import models


class Sync(models.Model):
    """A sync of a DataFrame into a queue, kept in the queue's database and written in the merge's transaction."""

    class State(models.TextChoices):
        RUNNING = "running", "Running"
        STORED = "stored", "Stored"
        FAILED = "failed", "Failed"

    class Path(models.TextChoices):
        JVM = "jvm", "JVM"
        PYTHON = "python", "Python"

    queue = models.CharField(max_length=255)
    stream = models.CharField(max_length=255, blank=True, default="", help_text="The stream's name; blank for a batch.")
    batch_id = models.BigIntegerField(null=True, blank=True, help_text="The stream's micro-batch.")
    checkpoint = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="Spark's id of the stream's query: the same for every run from one checkpoint.",
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    new = models.PositiveBigIntegerField(default=0)
    changed = models.PositiveBigIntegerField(default=0)
    unchanged = models.PositiveBigIntegerField(default=0)
    scheduled = models.PositiveBigIntegerField(default=0)
    superseded = models.PositiveBigIntegerField(default=0)
    rejected = models.PositiveBigIntegerField(default=0)
    replays = models.PositiveIntegerField(
        default=0, help_text="How many times Spark ran the batch again after it was stored."
    )
    queue_batch = models.ForeignKey(
        "nexus_queues.Batch",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name="batch",
        help_text="The batch of the messages it made Pending (new and changed); none when it wrote none.",
    )
    error = models.TextField(blank=True, default="")
    path = models.CharField(
        max_length=8,
        choices=Path.choices,
        default=Path.PYTHON,
        help_text="Where its rows were validated and staged: in Spark's JVM, or by Python workers.",
    )
    path_reason = models.TextField(blank=True, default="", help_text="Why the sync took its path.")
    watched = models.BooleanField(
        default=False, help_text="Its driver holds a lock while it runs: running without it, it failed."
    )

    class Meta:
        ordering = ("-id",)
        # A stream's batch is stored once: a replay finds its row (NULL batch ids never collide).
        constraints = [models.UniqueConstraint(fields=["stream", "batch_id"], name="nexus_spark_stream_batch")]

    def __str__(self) -> str:
        batch = f" batch {self.batch_id}" if self.batch_id is not None else ""
        return f"Sync #{self.pk} into {self.queue}{batch} ({self.state})"
