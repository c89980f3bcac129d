"""Is a database ready for a worker: the migrations of nexus_queues and of the queues' apps applied?"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from ..backends import backend_for
from ..connections import DATABASE_ERRORS, reset_connections
from ..exceptions import DatabaseRefused, NotMigrated
from ..failures import message_of
from ..messages import QueueMessage
from .breaker import CircuitBreaker


def unapplied(alias: str, app_labels: Iterable[str]) -> list[str]:
    """The migrations of ``app_labels`` not yet applied to database ``alias`` ("app.name"), in order."""
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    wanted = set(app_labels)
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan if migration.app_label in wanted]


def ensure_migrated(tables_of: dict[str, set[str]]) -> None:
    """:class:`NotMigrated` naming the first missing migrations, unless each alias's apps are migrated there;
    :class:`DatabaseRefused` when a server refuses the connection's settings."""
    for alias, app_labels in sorted(tables_of.items()):
        try:
            missing = unapplied(alias, app_labels)
        except DATABASE_ERRORS as exc:
            if backend_for(alias).refuses_settings(exc):
                raise DatabaseRefused(
                    f"Database {alias!r} refuses the connection ({' '.join(message_of(exc).split())}): fix "
                    f"DATABASES[{alias!r}]; a burst process does not wait for a configuration to change."
                ) from exc
            raise
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            raise NotMigrated(f"Database {alias!r} lacks the worker's tables ({len(missing)} migration(s) not "
                              f"applied: {shown}): run manage.py migrate --database {alias}.")


def apps_by_database(message_classes: Iterable[type[QueueMessage]], aliases: Iterable[str] = ()) -> dict[str, set[str]]:
    """The apps whose tables a process reads, by database: nexus_queues' own, and each queue's app."""
    apps: dict[str, set[str]] = {alias: {"nexus_queues"} for alias in aliases}
    for message_class in message_classes:
        alias = message_class.queue_options.database
        apps.setdefault(alias, {"nexus_queues"}).add(message_class.queue_model._meta.app_label)
    return apps or {"default": {"nexus_queues"}}


def wait_until_migrated(tables_of: dict[str, set[str]], breaker: CircuitBreaker, sleep: Callable[[float], object],
                        stopping: Callable[[], bool]) -> None:
    """A burst process's first step: :class:`NotMigrated` at once when tables are missing, :class:`DatabaseRefused`
    when a server refuses the connection's settings; a database that fails otherwise is tried again after
    ``breaker``'s pauses, until :class:`DatabaseUnavailable` once its time is over."""
    while not stopping():
        try:
            ensure_migrated(tables_of)
        except DATABASE_ERRORS as exc:
            reset_connections()
            pause = breaker.failure(exc)
            breaker.give_up_if_late()
            sleep(pause)
        else:
            breaker.success()
            return
