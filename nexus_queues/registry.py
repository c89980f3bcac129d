"""The registry of queues: queue name -> message class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .exceptions import AlreadyRegistered, NotRegistered

if TYPE_CHECKING:
    from .messages import QueueMessage


class QueueRegistry:
    """Every queue known to this process, found by autodiscovery or import."""

    def __init__(self) -> None:
        self._queues: dict[str, type[QueueMessage]] = {}

    def register(self, message_class: type[QueueMessage]) -> None:
        """Add a queue; a second class with the same queue name raises :class:`AlreadyRegistered`."""
        name = message_class.queue_name()
        known = self._queues.get(name)
        if known is not None and _path(known) != _path(message_class):
            raise AlreadyRegistered(
                f"Queue {name!r} is defined twice: by {_path(known)} and by {_path(message_class)}. "
                "Give one of them another queue=... name."
            )
        self._queues[name] = message_class

    def unregister(self, name: str) -> None:
        """Forget queue ``name`` (its model stays in Django's app registry)."""
        if self._queues.pop(name, None) is None:
            raise NotRegistered(f"No queue named {name!r}.")

    def get(self, name: str) -> type[QueueMessage]:
        """The message class of queue ``name``, or :class:`NotRegistered`."""
        try:
            return self._queues[name]
        except KeyError:
            known = ", ".join(sorted(self._queues)) or "none"
            raise NotRegistered(f"No queue named {name!r}. Known queues: {known}.") from None

    def resolve(self, queue: type[QueueMessage] | str) -> type[QueueMessage]:
        """A message class given itself or its queue name."""
        if isinstance(queue, str):
            return self.get(queue)
        if not isinstance(queue, type) or queue.__dict__.get("queue_options") is None:
            raise NotRegistered(f"{queue!r} is not a queue's message class.")
        return queue

    def __iter__(self) -> Iterator[type[QueueMessage]]:
        return iter(sorted(self._queues.values(), key=lambda c: c.queue_name()))

    def __contains__(self, name: object) -> bool:
        return name in self._queues

    def __len__(self) -> int:
        return len(self._queues)


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


registry = QueueRegistry()
