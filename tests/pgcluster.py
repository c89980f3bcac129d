"""A throwaway PostgreSQL cluster of a test's own: initdb into a temporary folder, started on a free port, stopped and
started again as the test says (never the shared server), run as ``postgres`` when the tests run as root.

Debian's server binaries (``/usr/lib/postgresql/<version>/bin``); :func:`available` says whether they are here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.pgbouncer import free_port

BINARIES = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
"""Each installed version's ``pg_ctl``, the newest last."""
PATIENCE = 120
"""Seconds initdb, a start or a stop may take on a loaded machine."""


def available() -> bool:
    """Are PostgreSQL's server binaries installed?"""
    return bool(BINARIES)


class Cluster:
    """A PostgreSQL cluster in a temporary folder, on its own port."""

    def __init__(self, base: Path) -> None:
        self.base, self.data, self.bin = base, base / "data", BINARIES[-1].parent
        self.port = free_port()

    def url(self, database: str = "postgres") -> str:
        """``DATABASE_URL`` of ``database`` on the cluster."""
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def settings(self, database: str = "postgres") -> dict[str, object]:
        """Django's settings of ``database`` on the cluster."""
        return {"ENGINE": "django.db.backends.postgresql", "HOST": "127.0.0.1", "PORT": self.port,
                "NAME": database, "USER": "postgres"}

    def run(self, *args: str, check: bool = True) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *args], check=check, capture_output=True, timeout=PATIENCE)

    def init(self) -> None:
        self.run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.base}"
        log = str(self.base / "log")
        self.run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", log, "-w", "-o", options, "start")

    def stop(self, mode: str = "fast", check: bool = True) -> None:
        """Stop the server: ``fast`` ends every session, ``immediate`` kills it (crash recovery at the next start)."""
        self.run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop", check=check)

    def psql(self, sql: str, database: str = "postgres") -> None:
        """Run ``sql`` on ``database``."""
        self.run("psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
                 "-v", "ON_ERROR_STOP=1", "-c", sql)


@contextmanager
def started() -> Iterator[Cluster]:
    """A new cluster, running; stopped (immediately) and removed at the end."""
    base = Path(tempfile.mkdtemp(prefix="nq_pg_cluster_"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    cluster = Cluster(base)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.stop("immediate", check=False)
        shutil.rmtree(base, ignore_errors=True)
