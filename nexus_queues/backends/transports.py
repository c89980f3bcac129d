"""The wake-up transports: PostgreSQL's LISTEN/NOTIFY, and local sockets where the database has none.

Without LISTEN/NOTIFY (SQLite, MariaDB) each waiting loop binds a UNIX datagram socket in a folder
per database; a committed enqueue sends every socket there the queue's name. Processes of other
hosts (or other users) are not reached: they find their messages by polling, as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import socket
import tempfile
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger("nexus_queues.wakeups")

AVAILABLE = hasattr(socket, "AF_UNIX")
"""Can this platform wake local loops (it has UNIX sockets)?"""


class Listener(Protocol):
    """What a waiting loop selects on to hear of new messages."""

    def fileno(self) -> int: ...

    def received(self) -> set[str]:
        """The queue names notified since the last call."""
        ...

    def close(self) -> None: ...


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


class NotifyListener:
    """A LISTENing psycopg connection, read like a local listener; it hears every host's enqueues."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    @classmethod
    def connect(cls, params: dict[str, Any], channel: str) -> NotifyListener:
        """A new autocommit connection from Django's connection ``params``, listening on ``channel``."""
        import psycopg

        kept = {k: params[k] for k in ("dbname", "user", "password", "host", "port", "sslmode") if k in params}
        connection = psycopg.connect(**kept, autocommit=True)
        connection.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(channel)))
        return cls(connection)

    def fileno(self) -> int:
        return int(self.connection.fileno())

    def received(self) -> set[str]:
        return {notice.payload for notice in self.connection.notifies(timeout=0)}

    def close(self) -> None:
        self.connection.close()
