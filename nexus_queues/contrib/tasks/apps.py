"""App configuration of the tasks backend: the app (label ``nexus_tasks``) that holds the task queues' models."""

from __future__ import annotations

from django.apps import AppConfig


class NexusTasksConfig(AppConfig):
    """The tasks framework's backend on nexus queues; its models module declares the task queues."""

    name = "nexus_queues.contrib.tasks"
    label = "nexus_tasks"
    verbose_name = "Tasks"
    default_auto_field = "django.db.models.BigAutoField"
