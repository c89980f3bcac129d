"""Bring what a tox environment's tests need onto this machine before they run: ``python tests/provision.py ENV``.

Where it can (as root, on Debian), it starts a local database server or broker that is down and installs Java,
Chromium and (for PostgreSQL) PgBouncer from Debian's packages. Where it cannot, it says nothing: the tests that need
the missing piece skip, one summary line saying how to get it (``tests/required.py``), or fail under ``CI=true``.
Standard library only: it runs before anything else is set up.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

LOCK = Path(tempfile.gettempdir()) / "nexus_queues_provision.lock"
"""Environments that tox runs at once take turns here: one apt-get at a time."""
PATIENCE = 60.0
"""Seconds a started service gets to take connections."""
POSTGRES_VERSIONS = Path("/etc/postgresql")
PGBOUNCER = os.environ.get("NEXUS_PGBOUNCER", "/usr/sbin/pgbouncer")
"""Where the PgBouncer tests look for it (``tests/pgbouncer.py``): outside root's PATH on Debian."""


def main(env: str) -> None:
    """Provide what ``env`` (a tox environment's name) needs."""
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for engine, (name, default_port, start) in SERVERS.items():
            if engine in env:
                database_server(name, default_port, start())
        if "postgres" in env:
            package(PGBOUNCER, "pgbouncer", "the transaction-pooling tests put a real PgBouncer before PostgreSQL")
        service("RabbitMQ", "127.0.0.1", 5672, ["rabbitmq-server", "-detached"])
        if env != "quick":
            package("java", "openjdk-17-jre-headless", "Spark's tests run a real local Spark")
            for engine, (jar, name) in JDBC_DRIVERS.items():
                if engine in env:
                    package(jar, name, "Spark's tests read and write the database with its JDBC driver")
            package(os.environ.get("NEXUS_CHROMIUM", "/usr/bin/chromium"), "chromium", "the admin's browser tests")


def database_server(name: str, default_port: int, start: list[str]) -> None:
    """Start the local server of ``DATABASE_URL`` if it is down."""
    url = urlsplit(os.environ.get("DATABASE_URL", ""))
    if url.hostname in {"127.0.0.1", "localhost"}:
        service(name, url.hostname, url.port or default_port, start)


def service(name: str, host: str, port: int, start: list[str]) -> None:
    """Run ``start`` (as root, when it is installed) if nothing answers at ``host:port``, then wait for it."""
    if answers(host, port) or os.geteuid() != 0 or not start or not shutil.which(start[0]):
        return
    print(f"provision: {name} is down at {host}:{port}: starting it ({' '.join(start)})", flush=True)
    subprocess.run(start, check=False, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + PATIENCE
    while not answers(host, port) and time.monotonic() < deadline:
        time.sleep(1)


def answers(host: str, port: int) -> bool:
    """Whether something takes TCP connections at ``host:port``."""
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError:
        return False
    return True


def package(command: str, name: str, why: str) -> None:
    """Install Debian's package ``name`` (as root, with apt-get) when ``command`` (or a file of that path) is
    missing."""
    if shutil.which(command) or Path(command).is_file() or os.geteuid() != 0 or not shutil.which("apt-get"):
        return
    print(f"provision: installing {name} with apt-get ({why})", flush=True)
    apt = ["apt-get", "-qq", "-o", "DPkg::Lock::Timeout=600"]
    quiet = {"stdout": subprocess.DEVNULL, "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}}
    subprocess.run([*apt, "update"], check=True, **quiet)  # type: ignore[call-overload]
    subprocess.run([*apt, "install", "-y", name], check=True, **quiet)  # type: ignore[call-overload]


def _postgres_start() -> list[str]:
    versions = sorted(POSTGRES_VERSIONS.iterdir()) if POSTGRES_VERSIONS.is_dir() else []
    return ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1].name, "main", "start"] if versions else []


def _mariadb_start() -> list[str]:
    return ["start-stop-daemon", "--start", "--oknodo", "--background", "--exec", "/usr/sbin/mariadbd"]


JDBC_DRIVERS = {
    "postgres": ("/usr/share/java/postgresql.jar", "libpostgresql-jdbc-java"),
    "mariadb": ("/usr/share/java/mariadb-java-client.jar", "libmariadb-java"),
}
"""Each tox engine's JDBC driver for Spark, where Debian's package puts it (``nexus_queues.backends.jdbc``)."""
SERVERS = {"postgres": ("PostgreSQL", 5432, _postgres_start), "mariadb": ("MariaDB", 3306, _mariadb_start)}
"""Each tox engine's server, its default port, and the command that starts it locally (Debian's)."""


if __name__ == "__main__":
    main(sys.argv[1])
