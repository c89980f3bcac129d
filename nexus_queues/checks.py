"""System checks: queue definitions and their migrations, and (with ``--database``) missing tables and indexes."""

from __future__ import annotations

import sys
from datetime import timedelta
from importlib.util import find_spec
from typing import Any

from django.apps import apps
from django.conf import settings as django_settings
from django.core import checks
from django.db import connections
from django.db.migrations.autodetector import MigrationAutodetector
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.state import ModelState, ProjectState
from django.urls import NoReverseMatch, reverse

from .conf import Settings, current_names, settings
from .exceptions import ConfigurationError, InvalidSchedule
from .jobs.control import all_jobs
from .pooling import check_prepared_statements, check_proxies, check_wakeup_databases
from .registry import registry
from .setting_types import CHECK_ID
from .setting_types import problems as declared_problems


def register() -> None:
    """Register the checks with Django (called from ``AppConfig.ready``)."""
    checks.register(check_setup)
    checks.register(check_queue_names)
    checks.register(check_queue_migrations, checks.Tags.models)
    checks.register(check_job_schedules)
    checks.register(check_settings)
    checks.register(check_live_worker_settings)
    checks.register(check_tables, checks.Tags.database)
    checks.register(check_prepared_statements)
    checks.register(check_wakeup_databases)
    checks.register(check_proxies, checks.Tags.database)
    checks.register(check_api_docs_offline, checks.Tags.urls)


def check_setup(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The app loaded: a configuration error met while finding queues and jobs stops every command in one line."""
    error = getattr(apps.get_app_config("nexus_queues"), "setup_error", None)
    if error is None or check_settings():  # check_settings names the wrong setting itself
        return []
    return [checks.Error(f"nexus_queues could not load: {error}", hint="Fix it, then run the command again.",
                         id="nexus_queues.E004")]


def check_queue_names(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Warn about queues named after their class: renaming the class would start a new, empty queue."""
    return [
        checks.Warning(
            f"Queue {cls.queue_name()!r} takes its name from class {cls.__qualname__}; renaming the class "
            "would make a new, empty queue.",
            hint=f'Name it explicitly: class {cls.__name__}(..., queue="{cls.queue_name()}").',
            obj=cls.queue_model,
            id="nexus_queues.W001",
        )
        for cls in registry
        if cls.queue_options.name_derived
    ]


def check_queue_migrations(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Each queue's model is what its app's migrations make, as ``makemigrations --check`` tells (from the migration
    files, without a database): a queue whose migration was never made has no table to enqueue into.

    Silent under ``manage.py makemigrations``, the command its hint names (Django runs every check before it).
    """
    if sys.argv[1:2] == ["makemigrations"]:
        return []
    loader = MigrationLoader(None, ignore_no_migrations=True)
    state = loader.project_state()
    stale = [cls.queue_model for cls in registry if not _as_migrated(cls.queue_model, state)]
    if not stale:  # the common case, without the autodetector's comparison of every model
        return []
    labels = {model._meta.app_label for model in stale}
    changes = MigrationAutodetector(state, ProjectState.from_apps(apps)).changes(
        graph=loader.graph, trim_to_apps=labels, convert_apps=labels
    )
    problems: list[checks.CheckMessage] = []
    for model in stale:
        label, name = _key(model)
        needed = [op.describe() for made in changes.get(label, []) for op in made.operations
                  if op.references_model(name, label)]  # fmt: skip
        if needed:
            problems.append(checks.Error(
                f"Queue {model.message_class.queue_name()!r} needs a migration that was never made: "
                f"{'; '.join(needed)}.",
                hint=f"Run manage.py makemigrations {label}, then migrate.", obj=model, id="nexus_queues.E005",
            ))
    return problems


def _key(model: Any) -> tuple[str, str]:
    return model._meta.app_label, model._meta.model_name


def _as_migrated(model: Any, state: ProjectState) -> bool:
    """Is ``model`` as the migrations' ``state`` has it?"""
    return _key(model) in state.models and state.models[_key(model)] == ModelState.from_model(model)


def check_job_schedules(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Every job's schedule is a cron expression or an interval, in a known time zone."""
    problems: list[checks.CheckMessage] = []
    for job in all_jobs():
        try:
            job.get_schedule()
        except InvalidSchedule as exc:
            problems.append(checks.Error(
                f"Job {job.name()} has a bad schedule: {exc}",
                hint='Give five cron fields ("*/5 * * * *"), a shorthand such as "@daily", or a timedelta from one '
                     "second to 100 years; and an IANA time zone name (\"Europe/Stockholm\").",
                obj=job, id="nexus_queues.E001",
            ))
    return problems


def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Every ``NEXUS_QUEUES`` setting is known, of its declared type and in its declared range."""
    given = getattr(django_settings, "NEXUS_QUEUES", None) or {}
    if not isinstance(given, dict):
        return [checks.Error(f"NEXUS_QUEUES must be a dict, got {type(given).__name__}.", id=CHECK_ID)]
    try:
        settings.NOTIFY  # noqa: B018  (reading a setting says which names are unknown or removed)
    except ConfigurationError as exc:
        return [checks.Error(str(exc), id=CHECK_ID)]
    given = current_names(given)
    return [
        checks.Error(f"NEXUS_QUEUES[{name!r}] must be {expects}, got {given[name]!r}.",
                     hint=f"See NEXUS_QUEUES[{name!r}] in the settings reference; remove it to use the default.",
                     id=check_id)
        for name, expects, check_id in declared_problems(Settings, given)
    ]


def check_live_worker_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A process is gone only after missing a heartbeat (the types are :func:`check_settings`'s)."""
    try:
        gone, beat = settings.WORKER_GONE_AFTER, settings.WORKER_HEARTBEAT_INTERVAL
    except ConfigurationError:  # unknown names: check_settings says which
        return []
    if isinstance(gone, timedelta) and isinstance(beat, timedelta) and gone <= beat:
        return [checks.Error(
            f"NEXUS_QUEUES['WORKER_GONE_AFTER'] ({gone}) is not longer than WORKER_HEARTBEAT_INTERVAL ({beat}): "
            "live processes would show as gone.",
            hint="Make WORKER_GONE_AFTER several heartbeats long.", id="nexus_queues.E002",
        )]
    return []


def check_api_docs_offline(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The API's docs page serves Swagger UI itself, not from a CDN, when the URLs are included."""
    if apps.is_installed("ninja") or not _api_docs_served():
        return []
    return [checks.Warning(
        f"The API docs page ({_api_docs_served()}) loads Swagger UI from a CDN, since \"ninja\" is not in "
        "INSTALLED_APPS: without the internet it is an empty page.",
        hint='Add "ninja" to INSTALLED_APPS to serve Swagger UI from your static files.',
        id="nexus_queues.W004",
    )]


def _api_docs_served() -> str:
    """The API docs page's path, or "" when the API is not installed or not in the URLconf."""
    if find_spec("ninja") is None or not hasattr(django_settings, "ROOT_URLCONF"):
        return ""  # no URLconf (a worker-only or script project): nothing is served
    try:
        return reverse("nexus_queues:openapi-view")  # the namespace nexus_queues.api gives its NinjaAPI
    except NoReverseMatch:
        return ""


def check_tables(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Each queue's table and the indexes its hot queries need exist in its database."""
    problems: list[checks.CheckMessage] = []
    for cls in registry:
        alias = cls.queue_options.database
        if databases is None or alias not in databases or cls.queue_model._meta.app_label in _unmigrated_apps(alias):
            continue
        connection = connections[alias]
        table = cls.queue_model._meta.db_table
        with connection.cursor() as cursor:
            if table not in connection.introspection.table_names(cursor):
                problems.append(
                    checks.Warning(
                        f"Queue {cls.queue_name()!r} has no table {table!r} in database {alias!r}.",
                        hint="Run makemigrations and migrate.",
                        obj=cls.queue_model,
                        id="nexus_queues.W002",
                    )
                )
                continue
            present = _indexed_columns(connection.introspection.get_constraints(cursor, table))
        column_of = {field.name: str(field.column) for field in cls.queue_model._meta.concrete_fields}
        for index in (*cls.queue_model._meta.indexes, *cls.queue_model._meta.constraints):
            columns = tuple(column_of[name.lstrip("-")] for name in index.fields)  # "-priority": descending
            if columns not in present:
                problems.append(
                    checks.Warning(
                        f"Queue {cls.queue_name()!r}: table {table!r} lacks the index {index.name} "
                        f"on {', '.join(columns)}.",
                        hint="Run migrate; if it was dropped by hand, recreate it with sqlmigrate's statement.",
                        obj=cls.queue_model,
                        id="nexus_queues.W003",
                    )
                )
    return problems


def _unmigrated_apps(alias: str) -> set[str]:
    """Apps with migrations not yet applied to ``alias``: migrate will make their tables."""
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return {migration.app_label for migration, _ in plan}


def _indexed_columns(constraints: dict[str, Any]) -> set[tuple[str, ...]]:
    return {tuple(c["columns"]) for c in constraints.values() if c.get("index") or c.get("unique")}
