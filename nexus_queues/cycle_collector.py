"""Python's cycle collector held off while a bulk call makes many short-lived objects.

Rows made by the hundred thousand hold no reference cycles: their reference counts free them. The
collector does not know that: their number triggers its passes, and each full pass walks every object
the process holds (Django's, the caller's messages), several times a call.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Holds:
    """Counts the holds of all threads: the first turns the collector off, the last gives it back as the first
    found it. Two threads' holds that overlap in any order leave it as it was before both."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.was_enabled = False

    def take(self) -> None:
        with self.lock:
            if self.count == 0:
                self.was_enabled = gc.isenabled()
                gc.disable()
            self.count += 1

    def give_back(self) -> None:
        with self.lock:
            self.count -= 1
            if self.count == 0 and self.was_enabled:
                gc.enable()


_holds = _Holds()


@contextmanager
def held() -> Iterator[None]:
    """The cycle collector off for the body, then as it was, also when the body raises.

    Objects in cycles made meanwhile, by any thread, are collected once the last hold ends.
    """
    _holds.take()
    try:
        yield
    finally:
        _holds.give_back()
