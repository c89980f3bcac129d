"""Running callables at the same moment, each in its own thread with its own database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections

from tests.commands import PATIENCE


def together(*work: Callable[[], Any]) -> list[Any]:
    """Run every callable at once (released by one barrier); their results, or the first exception raised."""
    barrier = threading.Barrier(len(work))
    results: list[Any] = [None] * len(work)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=PATIENCE)
            results[i] = work[i]()
        except BaseException as exc:  # handed to the test's thread below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PATIENCE * 2)
    assert not any(thread.is_alive() for thread in threads), "a racing thread did not finish"
    if errors:
        raise errors[0]
    return results
