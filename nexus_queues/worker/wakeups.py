"""Waking idle loops: PostgreSQL LISTEN/NOTIFY, a socket per loop on one host elsewhere, a local nudge everywhere."""

from __future__ import annotations

import logging
import os
import select
from collections.abc import Iterable

from ..backends import Listener, backend_for
from ..pooling import another_database, wakeup_alias

logger = logging.getLogger("nexus_queues.wakeups")

ANY = "*"
"""Returned by :meth:`Wakeups.wait` for a local nudge, which names no queue."""


class Wakeups:
    """Sleeps until a queue is notified, :meth:`nudge` is called (e.g. by a signal handler), or a timeout.

    With ``listen`` on, one listener per database alias: a LISTENing connection on PostgreSQL, which
    hears enqueues from every host, elsewhere a socket that hears this host's. A lost listener is
    reopened on a later wait, and polling (the timeout) stays the fallback meanwhile. An alias behind
    a transaction pooler is listened to on its ``WAKEUP_DATABASES`` alias, or polled, with a warning; an alias that
    reaches another database (another server's of the same name) is never listened to, and said so as an error.
    """

    def __init__(self, aliases: Iterable[str], *, listen: bool) -> None:
        listened = [a for a in dict.fromkeys(aliases) if listen and backend_for(a).features.can_listen]
        for alias in listened:
            if wakeup_alias(alias) is None:
                logger.warning(
                    "Database %r goes through a transaction pooler (DISABLE_SERVER_SIDE_CURSORS), which keeps no "
                    "LISTEN: its queues are polled. Name a direct alias to the same database in "
                    "NEXUS_QUEUES['WAKEUP_DATABASES'] to wake at once.", alias, extra={"action": "listen"},
                )
        self._aliases = [a for a in dict.fromkeys(map(wakeup_alias, listened)) if a is not None]
        self._unchecked = {alias: direct for alias in listened if (direct := wakeup_alias(alias)) not in (None, alias)}
        """The aliases whose ``WAKEUP_DATABASES`` alias is yet to be asked whether it reaches their database."""
        self._listeners: dict[str, Listener] = {}
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    @property
    def listening(self) -> bool:
        """Is at least one listener open?"""
        return bool(self._listeners)

    def connect(self) -> None:
        """Open the listeners not open yet; failures are logged and retried on a later wait."""
        for alias in list(self._aliases):
            if alias not in self._listeners:
                try:
                    if self._elsewhere(alias):
                        continue
                    self._listeners[alias] = backend_for(alias).listen()
                    logger.info("Listening for wake-ups on %s.", alias, extra={"action": "listen"})
                except Exception as exc:  # the driver's own errors, e.g. the server is down
                    logger.warning(
                        "Cannot listen on %s (%s); polling meanwhile.", alias, exc, extra={"action": "listen"}
                    )

    def _elsewhere(self, listened: str) -> bool:
        """Does ``listened``, a ``WAKEUP_DATABASES`` alias, reach another database than an alias it stands for? Then
        it is logged as an error once and never listened to: those queues are polled."""
        for alias in [alias for alias, direct in self._unchecked.items() if direct == listened]:
            problem = another_database(alias)
            del self._unchecked[alias]
            if problem:
                logger.error(
                    "NEXUS_QUEUES['WAKEUP_DATABASES'][%r] = %r: %s Its queues are polled; fix the setting (manage.py "
                    "check --database %s says so).", alias, listened, problem, alias, extra={"action": "listen"},
                )
                self._aliases.remove(listened)
                return True
        return False

    def nudge(self) -> None:
        """Wake the waiting loop now (safe from a signal handler or another thread)."""
        try:
            os.write(self._write, b"!")
        except BlockingIOError:
            pass

    def wait(self, timeout: float) -> set[str]:
        """Queue names notified within ``timeout`` seconds, ``{ANY}`` for a nudge, empty when it timed out."""
        self.connect()
        by_fd = {conn.fileno(): alias for alias, conn in self._listeners.items()}
        ready, _, _ = select.select([self._read, *by_fd], [], [], max(0.0, timeout))
        woken = self._drain_pipe() if self._read in ready else set()
        for alias in self._listeners.copy():
            woken |= self._drain(alias)
        return woken

    def close(self) -> None:
        """Close the listeners and the nudge pipe."""
        for listener in self._listeners.values():
            listener.close()
        self._listeners.clear()
        os.close(self._read)
        os.close(self._write)

    def _drain_pipe(self) -> set[str]:
        try:
            while os.read(self._read, 512):
                pass
        except BlockingIOError:
            pass
        return {ANY}

    def _drain(self, alias: str) -> set[str]:
        listener = self._listeners[alias]
        try:
            return listener.received()
        except Exception as exc:  # the driver's own errors: the server went away
            logger.warning("Listener on %s lost (%s); reopening.", alias, exc, extra={"action": "listen"})
            del self._listeners[alias]
            listener.close()
            return {ANY}
