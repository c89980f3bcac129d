"""App configuration: autodiscover queues and register the system checks."""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec

from django.apps import AppConfig, apps
from django.utils.module_loading import autodiscover_modules


def use_pymysql_for_mysql() -> None:
    """Let Django's MySQL backend run on PyMySQL (the ``mysql`` extra) when mysqlclient is not installed.

    Django imports its backend on first use of a connection, after the apps' configs are imported.
    """
    if find_spec("MySQLdb") is None and find_spec("pymysql") is not None:
        import pymysql

        pymysql.install_as_MySQLdb()


use_pymysql_for_mysql()


class NexusQueuesConfig(AppConfig):
    """Finds every queue (each installed app's ``queues`` module and ``NEXUS_QUEUES["MODULES"]``), then every
    queue job (each installed app's ``jobs`` module)."""

    name = "nexus_queues"
    verbose_name = "Queues"
    default_auto_field = "django.db.models.BigAutoField"

    setup_error: Exception | None = None
    """The configuration error that stopped :meth:`ready`; the system check ``nexus_queues.E004`` reports it."""

    def ready(self) -> None:
        from . import checks
        from .exceptions import ConfigurationError

        checks.register()
        try:
            self._discover()
        except ConfigurationError as exc:  # a check says it in a line, where raising here is every command's traceback
            self.setup_error = exc

    def _discover(self) -> None:
        from .conf import settings

        if apps.is_installed("django.contrib.auth"):
            from .api_tokens import follow_rehashes

            follow_rehashes()
        autodiscover_modules("queues")
        for module in settings.MODULES:
            import_module(module)
        if apps.is_installed("django.contrib.admin"):
            from .admin import autoregister

            autoregister()
        autodiscover_modules("jobs")
