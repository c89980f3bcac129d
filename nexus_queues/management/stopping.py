"""How a long-running command (ours or an integration's) stops: gracefully on the first SIGTERM/SIGINT, at once on
the second."""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType


def stop_on_signals(stop: Callable[[], None]) -> None:
    """Call ``stop`` on the first SIGTERM or SIGINT; exit at once (status 1) on the second."""
    received: list[int] = []

    def handle(signum: int, frame: FrameType | None) -> None:
        if received:
            raise SystemExit(1)
        received.append(signum)
        stop()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
