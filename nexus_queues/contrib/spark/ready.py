"""What a sync needs of its database, checked on the driver before Spark starts."""

from __future__ import annotations

from django.db import DatabaseError, connections

from ...exceptions import ConfigurationError, NotMigrated
from ...messages import QueueMessage
from .models import Sync


def check_migrated(message_class: type[QueueMessage]) -> None:
    """Raise :class:`NotMigrated` naming the missing tables (the queue's, the syncs' records) of its database."""
    alias = message_class.queue_options.database
    connection = connections[alias]
    try:
        with connection.cursor() as cursor:
            present = set(connection.introspection.table_names(cursor))
    except DatabaseError as exc:
        raise ConfigurationError(f"Database {alias!r} cannot be reached: {exc}".strip()) from exc
    needed = [message_class.queue_model._meta.db_table, Sync._meta.db_table]
    missing = [table for table in needed if table not in present]
    if missing:
        option = "" if alias == "default" else f" --database {alias}"
        raise NotMigrated(
            f"Database {alias!r} is not migrated: it has no table {', '.join(missing)}. Run manage.py migrate{option}."
        )
