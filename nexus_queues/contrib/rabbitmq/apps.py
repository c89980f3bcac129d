"""App configuration of the RabbitMQ bridge."""

from django.apps import AppConfig


class RabbitMQConfig(AppConfig):
    """Broker-side delays and the bridge between nexus queues and RabbitMQ (``nexus_queues.contrib.rabbitmq``)."""

    name = "nexus_queues.contrib.rabbitmq"
    label = "nexus_rabbitmq"
    verbose_name = "RabbitMQ"
