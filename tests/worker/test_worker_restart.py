"""A worker survives its PostgreSQL server stopping and starting again (a throwaway cluster of its own)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands import PATIENCE, ROOT, Command, reports, wait_until

PGBINS = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.engines("postgresql"),
    # In CI missing binaries fail the test rather than skip it.
    pytest.mark.skipif(
        not PGBINS and os.environ.get("CI") != "true", reason="needs PostgreSQL's server binaries (initdb, pg_ctl)"
    ),
]


class Cluster:
    """A PostgreSQL cluster in a temporary folder, on its own port, run as ``postgres`` when we are root."""

    def __init__(self, base: Path) -> None:
        self.base, self.data, self.bin = base, base / "data", PGBINS[-1].parent if PGBINS else Path()
        self.port = free_port()

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
        self.run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop", check=check)


def free_port() -> int:
    """A port free now, so that two runs on one machine start their clusters on different ports."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="nq_worker_pg_"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    cluster = Cluster(base)
    cluster.init()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop("immediate", check=False)
        shutil.rmtree(base, ignore_errors=True)


def python(env: dict[str, str], code: str) -> str:
    """Run Django code on the cluster's database; its stdout."""
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 0, done.stderr
    return done.stdout


ENQUEUE = "from nexus_queues import enqueue_many; from tests.testapp.more_queues import Ping\n" \
          "enqueue_many([Ping(n=n) for n in range({}, {})])"
ROWS = "import json; from tests.testapp.more_queues import Ping\n" \
       "print(json.dumps([[i.message.n, i.status] for i in Ping.queue_model.objects.all()]))"


def test_nexus_worker__survives_a_database_restart(cluster, tmp_path):
    """The worker logs, backs off and reconnects; it then drains what came meanwhile, and every message
    is either processed once or left Leased (the batch whose acknowledgement the outage lost)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT),
           "DATABASE_URL": f"postgres://postgres@127.0.0.1:{cluster.port}/postgres",
           "NEXUS_TEST_OUT": str(tmp_path / "out"), "NEXUS_TEST_BATCH": "10", "NEXUS_TEST_PING_SLEEP": "0.005"}
    env.pop("NEXUS_TEST_DB_NAME", None)
    subprocess.run([sys.executable, "-m", "django", "migrate", "-v0"], env=env, cwd=ROOT, check=True, timeout=PATIENCE)
    python(env, ENQUEUE.format(0, 300))
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as err:
        args = ["nexus_worker", "--queue", "pings", "--peek-delay", "0.2"]
        proc = subprocess.Popen([sys.executable, "-m", "django", *args], env=env, cwd=ROOT, stderr=err,
                                stdout=subprocess.DEVNULL)
    worker = Command(proc, stderr)
    files = {"out": tmp_path / "out"}
    try:
        wait_until(lambda: len(reports(files)) >= 30, "the worker to get going", worker)
        cluster.stop()
        worker.wait_logged("The worker's database failed")
        cluster.start()
        python(env, ENQUEUE.format(1000, 1100))
        wait_until(lambda: {int(w[1]) for w in reports(files)} >= set(range(1000, 1100)), "the later pings", worker)
        proc.send_signal(signal.SIGTERM)
        assert worker.finish() == 0, worker.log()
    finally:
        if proc.poll() is None:
            proc.kill()
    processed = Counter(int(words[1]) for words in reports(files))
    left = dict(json.loads(python(env, ROWS)))
    assert set(left.values()) <= {"Leased"}
    assert max(processed.values()) == 1, "a message was processed twice"
    assert set(processed) | set(left) == set(range(300)) | set(range(1000, 1100)), "a message was lost"
    assert "recovered after" in worker.log()
