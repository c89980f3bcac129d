"""The API tokens' rows (see :mod:`nexus_queues.api_tokens`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    """One bearer token made by ``manage.py nexus_api_token``; deleting its row revokes it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    password = models.CharField(max_length=32, help_text="Fingerprint of the user's password hash the token is bound "
                                                         "to; follows rehashes of the same password")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "nexus_api_token"
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token {self.pk} of user {self.user_id}"
