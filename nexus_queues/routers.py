"""A database router that keeps each queue's table in the database its class names."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models import Model


class QueueRouter:
    """Add ``"nexus_queues.routers.QueueRouter"`` to ``DATABASE_ROUTERS`` when a queue sets ``database=``."""

    def _alias(self, model: type[Model]) -> str | None:
        message_class = getattr(model, "message_class", None)
        return message_class.queue_options.database if message_class is not None else None

    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        return self._alias(model)

    def db_for_write(self, model: type[Model], **hints: Any) -> str | None:
        return self._alias(model)

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool | None:
        # Migrations pass historical models, which lack message_class: look the real one up.
        try:
            model = apps.get_model(app_label, model_name) if model_name else None
        except LookupError:
            return None
        alias = self._alias(model) if model is not None else None
        return None if alias is None else db == alias
