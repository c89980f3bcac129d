"""A queue found through ``NEXUS_QUEUES["MODULES"]`` rather than a ``queues`` module."""

from nexus_queues import QueueMessage


class Ping(QueueMessage, queue="pings"):
    """The smallest message."""

    n: int = 0
