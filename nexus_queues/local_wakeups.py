"""Wake-ups between processes on one host, for databases without LISTEN/NOTIFY (SQLite, MariaDB).

Each waiting loop binds a UNIX datagram socket in a folder per database; a committed enqueue
sends every socket there the queue's name. Processes of other hosts (or other users) are not
reached: they find their messages by polling, as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import socket
import tempfile
from pathlib import Path

logger = logging.getLogger("nexus_queues.wakeups")

AVAILABLE = hasattr(socket, "AF_UNIX")
"""Can this platform wake local loops (it has UNIX sockets)?"""


def _folder(database: str) -> Path:
    digest = hashlib.sha256(database.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "nexus_queues" / digest


class LocalListener:
    """One waiting loop's socket; ``fileno`` is for ``select``, :meth:`received` drains it."""

    def __init__(self, database: str) -> None:
        folder = _folder(database)
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{os.getpid()}-{secrets.token_hex(4)}.sock"
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._socket.bind(str(self.path))  # an OSError if the path is too long (about 100 bytes)
        except OSError:
            self._socket.close()
            raise
        self._socket.setblocking(False)

    def fileno(self) -> int:
        return self._socket.fileno()

    def received(self) -> set[str]:
        """The queue names sent since the last call."""
        names = set()
        while True:
            try:
                names.add(self._socket.recv(512).decode())
            except BlockingIOError:
                return names

    def close(self) -> None:
        self._socket.close()
        self.path.unlink(missing_ok=True)


def wake(database: str, queue: str) -> None:
    """Tell every loop waiting on ``database`` on this host that ``queue`` has new messages."""
    try:
        sockets = list(_folder(database).iterdir())
    except FileNotFoundError:
        return  # nothing waits here
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
        sender.setblocking(False)
        for path in sockets:
            try:
                sender.sendto(queue.encode(), str(path))
            except (ConnectionRefusedError, FileNotFoundError):
                path.unlink(missing_ok=True)  # left by a process that was killed
            except OSError as exc:  # full (it has wake-ups waiting already) or another user's
                logger.debug("No wake-up sent to %s: %s", path, exc)
