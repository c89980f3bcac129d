"""Queues found through ``NEXUS_QUEUES["MODULES"]`` rather than a ``queues`` module."""

from nexus_queues import QueueMessage


class Ping(QueueMessage, queue="pings"):
    """The smallest message."""

    n: int = 0


class Errand(QueueMessage, queue="errands", concurrency_limit=2, health_check=False):
    """At most two Leased at once, across every worker."""

    n: int = 0


class Visit(QueueMessage, queue="visits", concurrency_limit=1, concurrency_key="customer", health_check=False):
    """At most one Leased at once per customer."""

    customer: str
    n: int = 0


class Beat(QueueMessage, queue="beats", rate_limit="10/s", health_check=False):
    """At most ten leases in any one second."""

    n: int = 0


class Nudge(QueueMessage, queue="nudges", rate_limit="2/h", rate_key="customer", health_check=False):
    """At most two leases an hour per customer."""

    customer: str
    n: int = 0


class Tour(QueueMessage, queue="tours", concurrency_limit=1, concurrency_key="guide", health_check=False):
    """At most one Leased at once per guide; the tours without a guide are one group, limited as a guide is."""

    guide: str | None = None
    n: int = 0


class Call(QueueMessage, queue="calls", rate_limit="1/h", rate_key="guide", health_check=False):
    """At most one lease an hour per guide; the calls without a guide share one rate."""

    guide: str | None = None
    n: int = 0
