"""The base of the commands that run a process (worker, dispatch loop): a database that is down is theirs to judge."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError


class ProcessCommand(BaseCommand):
    """A command whose system checks read no database, as before Django 6, and whose configuration errors are one
    line (a ``CommandError``), not a traceback.

    Django 6 checks every database's JSON support before ``handle()``, which connects: with the database down, a
    burst worker died there in a traceback, where its breaker waits a bounded time and exits in one line.
    """

    def get_check_kwargs(self, options: dict[str, Any]) -> dict[Any, Any]:
        return {"databases": []}

    def execute(self, *args: Any, **options: Any) -> str | None:
        """Django's execute; a configuration error met while running (with ``--skip-checks``) as a CommandError."""
        try:
            return super().execute(*args, **options)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
