"""What the claims of queues with flow limits keep in the database (see :mod:`nexus_queues.limited_claims`)."""

from __future__ import annotations

from django.db import models


class LimitTurn(models.Model):
    """One row per queue with limits, locked by each of its claims: its claims take turns, so that no two of them
    count the same free places."""

    queue = models.CharField(max_length=40, unique=True)

    class Meta:
        app_label = "nexus_queues"
        db_table = "nexus_limit_turn"

    def __str__(self) -> str:
        return self.queue


class LimitedStart(models.Model):
    """The messages a claim of a rate-limited queue leased, per key value: what its rate counts."""

    queue = models.CharField(max_length=40)
    key = models.TextField(null=True, blank=True, help_text="The key field's value as text (NULL: the whole queue)")  # noqa: DJ001
    started_at = models.DateTimeField(help_text="The claim's time")
    count = models.PositiveIntegerField()

    class Meta:
        app_label = "nexus_queues"
        db_table = "nexus_limited_start"
        indexes = [models.Index(fields=["queue", "started_at"], name="nx_limited_start_queue")]

    def __str__(self) -> str:
        return f"{self.queue} {self.key or ''} {self.count} at {self.started_at:%H:%M:%S}"
