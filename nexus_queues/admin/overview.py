"""The statuses a queue's admin suggests in its status fields."""

from __future__ import annotations

from collections.abc import Iterable

from ..messages import QueueMessage
from ..overview import present_statuses
from ..status import SETTABLE_STATUSES, Status
from ..updates import default_status

MAX_STATUS_SUGGESTIONS = 50
"""Status fields suggest at most this many statuses found in the table."""


def status_suggestions(found: Iterable[str], *more: str) -> list[str]:
    """What a status field suggests: the settable built-in statuses, then the custom ones among ``found`` and
    ``more`` (e.g. the queue's default status), in order."""
    custom = {s for s in (*found, *more) if s not in set(Status)}
    return [*SETTABLE_STATUSES, *sorted(custom)]


def queue_status_suggestions(message_class: type[QueueMessage]) -> list[str]:
    """The suggestions for a status field of the queue: built-in statuses and the custom ones in its table."""
    rows = message_class.queue_items()
    return status_suggestions(present_statuses(rows, MAX_STATUS_SUGGESTIONS), default_status(message_class))
