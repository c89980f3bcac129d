"""Time limits: a watchdog thread that stops a job's processing once it runs past its limit.

At the deadline it raises :class:`TimeLimitExceeded` in the thread running the job (an asynchronous exception,
delivered when that thread next runs Python code), and wakes the main thread from a blocking call with ``SIGALRM``.
Code blocked in C elsewhere cannot be interrupted: once the grace has passed too, the watchdog settles the
message itself (``on_stuck``), so that it never waits Leased for its lease to run out.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from types import FrameType
from typing import Any, Generic, TypeVar

from ..connections import reset_connections
from ..exceptions import TimeLimitExceeded
from ..failures import message_of
from .beating import BeatingThread

logger = logging.getLogger("nexus_queues.worker")

T = TypeVar("T")


@dataclass(eq=False)
class _Deadline:
    thread_id: int
    at: float
    on_stuck: Callable[[], None]
    fired: bool = False
    settled: bool = False


@dataclass(frozen=True)
class Limited(Generic[T]):
    """What a limited call came to: its result, or the :class:`TimeLimitExceeded` that stopped it."""

    result: T | TimeLimitExceeded
    fired: bool
    """Did the limit pass while it ran (so that a :class:`TimeLimitExceeded` it holds is the watchdog's)?"""
    settled: bool
    """Did the watchdog settle the messages itself (the code did not unwind within the grace)?"""


class TimeLimits(BeatingThread):
    """Watches the deadlines of the limited calls running in a worker's threads."""

    def __init__(self, grace: timedelta, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__("nexus-time-limits")
        self.grace = grace.total_seconds()
        self.clock = clock
        self._deadlines: list[_Deadline] = []
        self._lock = threading.Lock()
        self._previous_handler: Any = None

    def call(self, work: Callable[[], T], limit: timedelta, on_stuck: Callable[[], None]) -> Limited[T]:
        """``work()``, stopped by :class:`TimeLimitExceeded` raised in it once ``limit`` has passed; ``on_stuck()``
        runs in the watchdog's thread when ``work`` has not returned by the end of the grace. Unlimited while the
        watchdog is not running (a test's ``Worker.sweep()`` without ``run()``)."""
        if not self.is_alive():
            return Limited(work(), fired=False, settled=False)
        deadline = self._arm(limit, on_stuck)
        result: Any = _UNSET
        while True:
            try:
                if result is _UNSET:
                    result = work()
                self._disarm(deadline)
                break
            except TimeLimitExceeded as exc:  # raised into work(), or in the instant between its return and disarm
                if result is _UNSET:
                    result = exc
            except BaseException:
                self._disarm(deadline)
                raise
        return Limited(result, deadline.fired, deadline.settled)

    def start(self) -> None:
        """Start watching; in the main thread, also take ``SIGALRM`` (when nothing else handles it) to wake it."""
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGALRM) in (
            signal.SIG_DFL, None,
        ):
            self._previous_handler = signal.signal(signal.SIGALRM, _woken)
        super().start()

    def stop(self) -> None:
        """End the thread, giving ``SIGALRM`` back."""
        super().stop()
        if self._previous_handler is not None:
            signal.signal(signal.SIGALRM, self._previous_handler)
            self._previous_handler = None

    def _arm(self, limit: timedelta, on_stuck: Callable[[], None]) -> _Deadline:
        deadline = _Deadline(threading.get_ident(), self.clock() + limit.total_seconds(), on_stuck)
        with self._lock:
            self._deadlines.append(deadline)
        self._wake.set()
        return deadline

    def _disarm(self, deadline: _Deadline) -> None:
        """Forget ``deadline``; once this returns, no exception is raised into the calling thread for it."""
        with self._lock:
            if deadline in self._deadlines:
                self._deadlines.remove(deadline)
            if deadline.fired:
                _raise_in(deadline.thread_id, None)  # drop one still pending

    def _beat(self) -> float:
        """Fire the deadlines due, settle those stuck past the grace; seconds until the next is due."""
        now = self.clock()
        stuck = []
        with self._lock:
            for deadline in self._deadlines:
                if not deadline.fired and deadline.at <= now:
                    self._fire(deadline)
                if deadline.fired and not deadline.settled and deadline.at + self.grace <= now:
                    deadline.settled = True
                    stuck.append(deadline)
            due = [d.at + self.grace if d.fired else d.at for d in self._deadlines if not d.settled]
        for deadline in stuck:
            self._settle(deadline)
        return max(0.0, min(due, default=now + 60) - now)

    def _fire(self, deadline: _Deadline) -> None:
        deadline.fired = True
        _raise_in(deadline.thread_id, TimeLimitExceeded)
        if deadline.thread_id == threading.main_thread().ident and self._previous_handler is not None:
            signal.pthread_kill(deadline.thread_id, signal.SIGALRM)  # breaks a sleep, a lock or socket wait

    def _settle(self, deadline: _Deadline) -> None:
        try:
            deadline.on_stuck()
        except Exception as exc:  # the database is away: the message stays Leased under a live, renewed lease
            logger.error(
                "Could not settle a message past its time limit (%s: %s).", type(exc).__name__, message_of(exc),
                exc_info=exc, extra={"action": "time_limit_unsettled"},
            )
            reset_connections()


_UNSET = object()


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    """Raise ``exception`` in the thread asynchronously (None: drop the one pending)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception is not None else None
    )


def _woken(signum: int, frame: FrameType | None) -> None:
    """SIGALRM's handler: nothing; the signal only breaks the main thread out of a blocking call, so that the
    pending :class:`TimeLimitExceeded` is raised."""
