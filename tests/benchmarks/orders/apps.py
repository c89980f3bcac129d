from django.apps import AppConfig


class OrdersConfig(AppConfig):
    """The benchmarks' orders queue (tests/benchmarks/settings_spark.py installs it)."""

    name = "tests.benchmarks.orders"
    label = "bench_orders"
    default_auto_field = "django.db.models.BigAutoField"
