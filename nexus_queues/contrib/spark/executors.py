"""Django in Spark's Python processes: set up from the driver's settings, once per process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import django
from django.apps import apps
from django.conf import settings
from django.db import connections

from ...backends import backend_for
from ...exceptions import ConfigurationError


@dataclass(frozen=True)
class DjangoSetup:
    """What a Spark process needs to set Django up as the driver has it."""

    settings_module: str
    databases: dict[str, dict[str, Any]]
    """Each alias's connection settings as the driver uses them (a test run's database names included)."""
    paths: tuple[str, ...]
    """The driver's import path: where they exist on an executor (local Spark), the project imports there too."""

    @classmethod
    def of_this_process(cls) -> DjangoSetup:
        """This (set-up) process's settings module, databases and import path."""
        module = os.environ.get("DJANGO_SETTINGS_MODULE") or getattr(settings, "SETTINGS_MODULE", None)
        if not module:
            raise ConfigurationError(
                "Spark's processes set Django up from a settings module: set DJANGO_SETTINGS_MODULE "
                "(settings.configure() cannot be passed to them)."
            )
        databases = {alias: dict(connections[alias].settings_dict) for alias in connections}
        return cls(module, databases, tuple(path or os.getcwd() for path in sys.path))

    def ensure(self) -> None:
        """Set Django up in this process unless it is already."""
        if apps.ready:
            return
        for path in self.paths:
            if path not in sys.path and os.path.isdir(path):
                sys.path.append(path)
        os.environ["DJANGO_SETTINGS_MODULE"] = self.settings_module
        settings.DATABASES.update(self.databases)
        django.setup()


@contextmanager
def django_ready(setup: DjangoSetup | None) -> Iterator[None]:
    """Django set up for the body, and this process's connections closed after it (Spark keeps its
    Python workers between tasks; a connection left open would outlive the database it points to)."""
    if setup is None:
        raise ConfigurationError(
            "The nexus data source was not registered with Django's settings: use "
            "nexus_queues.contrib.spark.session() or register(spark) rather than spark.dataSource.register()."
        )
    setup.ensure()
    try:
        yield
    finally:
        connections.close_all()


def shared_database(alias: str) -> None:
    """Raise unless every Spark process can reach database ``alias`` (an in-memory SQLite cannot be shared)."""
    if not backend_for(alias).shared_between_processes():
        raise ConfigurationError(
            f"Database {alias!r} is an in-memory SQLite database, which Spark's other processes cannot see: use a file."
        )
