"""A queue with a mistake, loaded only by ``tests.settings_misconfigured``."""

from nexus_queues import QueueMessage


class Misconfigured(QueueMessage, queue="misconfigured", helth_check=False):
    """``helth_check`` is not an option."""

    note: str
