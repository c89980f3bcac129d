"""The worker's helper threads: each wakes at its next beat, or at once when woken, until it is stopped."""

from __future__ import annotations

import threading

from ..connections import reset_connections


class BeatingThread(threading.Thread):
    """A daemon thread that calls :meth:`_beat` until :meth:`stop`; ``_beat`` returns the seconds to the next one."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._wake = threading.Event()
        self._stopped = False

    def stop(self) -> None:
        """End the thread."""
        self._stopped = True
        self._wake.set()

    def run(self) -> None:
        try:
            while not self._stopped:
                self._wake.wait(self._beat())
                self._wake.clear()
        finally:
            reset_connections()

    def _beat(self) -> float:
        raise NotImplementedError
