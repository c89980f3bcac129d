from typing import Any

from django.apps import AppConfig

SIGNALLED_STREAM = "signalled"
"""A Spark stream into greetings under this name enqueues a Ping(n=sync id) per ``synced`` signal."""


class TestAppConfig(AppConfig):
    name = "tests.testapp"
    label = "testapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from nexus_queues import signals

        from .queues import Greeting

        # Connected here, as a project would, so that Spark's Python processes (which set Django up) have it too.
        signals.synced.connect(_ping_when_synced, sender=Greeting, dispatch_uid="testapp.synced")


def _ping_when_synced(sender: Any, sync_id: int, **kwargs: Any) -> None:
    from django.apps import apps

    from nexus_queues import enqueue

    from .more_queues import Ping

    if apps.is_installed("nexus_queues.contrib.spark"):
        from nexus_queues.contrib.spark.models import Sync

        if Sync.objects.filter(pk=sync_id, stream=SIGNALLED_STREAM).exists():
            enqueue(Ping(n=sync_id))
