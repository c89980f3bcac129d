"""A real PgBouncer in transaction pooling mode, in front of the test run's PostgreSQL server, on a free port.

Debian's ``pgbouncer`` (``tests/provision.py`` installs it); it will not run as root, so as root it is started
with ``-u postgres``. The tests, the benchmark and any script may use :func:`start` and :func:`stop`.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMMAND = os.environ.get("NEXUS_PGBOUNCER") or shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
"""The PgBouncer executable (``NEXUS_PGBOUNCER`` names another)."""
RUN_AS = ("postgres", "nobody")
"""The system users PgBouncer may run as when started by root, the first that exists (Debian's PostgreSQL package
makes ``postgres``)."""
PATIENCE = 30.0
"""Seconds PgBouncer gets to take connections."""


@dataclass
class Bouncer:
    """A running PgBouncer: its port, process and folder (its ini file and log)."""

    port: int
    proc: subprocess.Popen[bytes]
    folder: Path

    def log(self) -> str:
        """What PgBouncer logged so far."""
        return (self.folder / "pgbouncer.log").read_text(errors="replace")


def available() -> bool:
    """Is PgBouncer installed?"""
    return os.access(COMMAND, os.X_OK)


def start(server: dict[str, Any], pool_mode: str = "transaction") -> Bouncer:
    """Start PgBouncer in front of the server of Django's database settings ``server`` (any database name on it)."""
    folder = Path(tempfile.mkdtemp(prefix="nexus_pgbouncer_"))
    folder.chmod(0o755)  # PgBouncer, run as another user, reads its files here
    port = free_port()
    target = f"host={server.get('HOST') or '127.0.0.1'} port={server.get('PORT') or 5432}"
    if server.get("USER"):
        target += f" user={server['USER']}" + (f" password={server['PASSWORD']}" if server.get("PASSWORD") else "")
    (folder / "users.txt").write_text(f'"{server.get("USER") or "postgres"}" ""\n')
    (folder / "pgbouncer.ini").write_text(
        f"[databases]\n* = {target}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n"
        f"unix_socket_dir =\nauth_type = trust\nauth_file = {folder / 'users.txt'}\npool_mode = {pool_mode}\n"
        "max_client_conn = 200\ndefault_pool_size = 20\nignore_startup_parameters = extra_float_digits\n"
    )
    run_as = ["-u", next(user for user in RUN_AS if _exists(user))] if os.geteuid() == 0 else []
    with (folder / "pgbouncer.log").open("wb") as log:
        proc = subprocess.Popen([COMMAND, *run_as, str(folder / "pgbouncer.ini")], stdout=log, stderr=log)
    bouncer = Bouncer(port, proc, folder)
    deadline = time.monotonic() + PATIENCE
    while not _answers(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(bouncer)
            raise RuntimeError(f"PgBouncer did not start on port {port}:\n{bouncer.log()}")
        time.sleep(0.05)
    return bouncer


def stop(bouncer: Bouncer) -> None:
    """Stop PgBouncer (by its process id) and remove its folder."""
    if bouncer.proc.poll() is None:
        bouncer.proc.terminate()
        try:
            bouncer.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            bouncer.proc.kill()
            bouncer.proc.wait()
    shutil.rmtree(bouncer.folder, ignore_errors=True)


def through(settings: dict[str, Any], bouncer: Bouncer) -> dict[str, Any]:
    """Django's database ``settings`` reaching the same database through ``bouncer``, declared transaction-pooled."""
    return {**settings, "HOST": "127.0.0.1", "PORT": bouncer.port, "DISABLE_SERVER_SIDE_CURSORS": True}


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


def free_port() -> int:
    """A port free now on 127.0.0.1, so that two runs on one machine start their servers on different ports."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
