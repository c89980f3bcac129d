"""App configuration of the Spark pipeline."""

from django.apps import AppConfig


class SparkConfig(AppConfig):
    """Records of Spark syncs into queues (``nexus_queues.contrib.spark``)."""

    name = "nexus_queues.contrib.spark"
    label = "nexus_spark"
    verbose_name = "Spark syncs"
    default_auto_field = "django.db.models.BigAutoField"
