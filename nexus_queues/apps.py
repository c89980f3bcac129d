"""App configuration: autodiscover queues and register the system checks."""

from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig, apps
from django.utils.module_loading import autodiscover_modules


class NexusQueuesConfig(AppConfig):
    """Finds every queue (each installed app's ``queues`` module and ``NEXUS_QUEUES["MODULES"]``), then every
    queue job (each installed app's ``jobs`` module)."""

    name = "nexus_queues"
    verbose_name = "Queues"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks
        from .conf import settings

        checks.register()
        autodiscover_modules("queues")
        for module in settings.MODULES:
            import_module(module)
        if apps.is_installed("django.contrib.admin"):
            from .admin import autoregister

            autoregister()
        autodiscover_modules("jobs")
