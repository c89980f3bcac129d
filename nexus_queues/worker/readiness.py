"""Is a database ready for a worker: the migrations of nexus_queues and of the queues' apps applied?"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from ..exceptions import NotMigrated


def unapplied(alias: str, app_labels: Iterable[str]) -> list[str]:
    """The migrations of ``app_labels`` not yet applied to database ``alias`` ("app.name"), in order."""
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    wanted = set(app_labels)
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan if migration.app_label in wanted]


def ensure_migrated(tables_of: dict[str, set[str]]) -> None:
    """:class:`NotMigrated` naming the first missing migrations, unless each alias's apps are migrated there."""
    for alias, app_labels in sorted(tables_of.items()):
        missing = unapplied(alias, app_labels)
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            raise NotMigrated(f"Database {alias!r} lacks the worker's tables ({len(missing)} migration(s) not "
                              f"applied: {shown}): run manage.py migrate --database {alias}.")
