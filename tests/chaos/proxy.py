"""A TCP proxy in front of a real server (the broker, a database) whose replies a test can hold back (a broker that
takes messages but does not answer, on a connection that stays up) or drop with the connection (a database that
committed a transaction whose reply never came)."""

from __future__ import annotations

import socket
import threading
from types import TracebackType


class Proxy:
    """Forwards 127.0.0.1:``port`` to the server at ``target``; while :meth:`hold` is on, the server's bytes wait."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._drop_after: bytes | None = None
        self._dropping = threading.Event()
        self.connections = 0
        self.dropped = 0
        """Connections closed by :meth:`drop_reply_after`."""
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self) -> None:
        """Keep what the broker sends from here on, until :meth:`release`."""
        self._flowing.clear()

    def drop_reply_after(self, marker: bytes = b"") -> None:
        """Once a client sends bytes holding ``marker`` (any bytes: ``b""``), close its connection in place of the
        server's reply: the server did the work, the client never hears of it. Once only."""
        self._drop_after = marker

    def release(self) -> None:
        """Pass on what the broker sent, and whatever it sends next."""
        self._flowing.set()

    def open_connections(self) -> int:
        """Client connections still open through the proxy."""
        with self._lock:
            return sum(1 for sock in self._sockets[::2] if sock.fileno() != -1)

    def close(self) -> None:
        """Stop accepting and close every socket."""
        self._closed.set()
        self._flowing.set()
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                _close(sock)

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._closed.is_set():  # closing the listener did not end an accept() already waiting
                _close(client)
                return
            broker = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, broker]
                self.connections += 1
            threading.Thread(target=self._pump, args=(client, broker, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(broker, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_broker: bool) -> None:
        try:
            while data := source.recv(65536):
                if from_broker:
                    self._flowing.wait()
                    if self._dropping.is_set():
                        self._dropping.clear()
                        self.dropped += 1
                        break
                elif self._drop_after is not None and self._drop_after in data:
                    self._drop_after = None
                    self._dropping.set()
                sink.sendall(data)
        except OSError:
            pass
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
