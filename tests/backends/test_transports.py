"""Wake-ups between processes of one host, where the database has no LISTEN/NOTIFY."""

import os
import select
import shutil
import socket
import tempfile

import pytest

from nexus_queues.backends import transports
from nexus_queues.backends.transports import LocalListener, wake

pytestmark = pytest.mark.skipif(not transports.AVAILABLE, reason="no UNIX sockets on this platform")


@pytest.fixture
def database(monkeypatch):
    """A database name of this test alone, its sockets in a short temporary folder (socket paths are short)."""
    folder = tempfile.mkdtemp(prefix="nq", dir="/tmp" if os.path.isdir("/tmp") else None)
    monkeypatch.setattr(transports.tempfile, "gettempdir", lambda: folder)
    yield f"sqlite://{folder}/db.sqlite3"
    shutil.rmtree(folder)


def test_wake__reaches_every_listener_of_the_database(database):
    first, second, other = LocalListener(database), LocalListener(database), LocalListener(database + "-other")
    try:
        wake(database, "greetings")
        wake(database, "pings")
        ready, _, _ = select.select([first, second, other], [], [], 5)
        assert set(ready) == {first, second}
        assert first.received() == second.received() == {"greetings", "pings"}
        assert first.received() == set() and other.received() == set()
    finally:
        for listener in (first, second, other):
            listener.close()


def test_wake__removes_the_socket_of_a_killed_process(database):
    """A socket file whose process is gone (nothing bound to it) is deleted; live ones are kept."""
    live, dead = LocalListener(database), LocalListener(database)
    dead._socket.close()  # as a SIGKILL leaves it: the file stays, nothing listens
    try:
        wake(database, "greetings")
        assert not dead.path.exists() and live.path.exists()
        assert live.received() == {"greetings"}
    finally:
        live.close()


def test_wake__without_listeners_does_nothing(database):
    wake(database, "greetings")  # no folder yet
    listener = LocalListener(database)
    listener.close()
    assert not listener.path.exists()
    wake(database, "greetings")  # an empty folder


def test_wake__full_socket_is_skipped(database):
    """A listener that stopped reading does not block the sender: its wake-ups are already waiting."""
    listener = LocalListener(database)
    try:
        listener._socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        for _ in range(1000):
            wake(database, "greetings")
        assert listener.received() == {"greetings"}
    finally:
        listener.close()
