"""A worker survives its PostgreSQL server stopping and starting again (a throwaway cluster of its own)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter

import pytest

from tests.commands import PATIENCE, ROOT, Command, reports, wait_until

pytestmark = pytest.mark.engines("postgresql")


def python(env: dict[str, str], code: str) -> str:
    """Run Django code on the cluster's database; its stdout."""
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 0, done.stderr
    return done.stdout


ENQUEUE = "from nexus_queues import enqueue_many; from tests.testapp.more_queues import Ping\n" \
          "enqueue_many([Ping(n=n) for n in range({}, {})])"
LOST = ("The worker's database failed", "Lost the connection")
"""What the worker logs when the server goes: a sweep's failure, or a claim's or acknowledgement's."""
RECOVERED = ("recovered after", " lost connection(s).")
"""What it logs when the server is back."""
ROWS = "import json; from tests.testapp.more_queues import Ping\n" \
       "print(json.dumps([[i.message.n, i.status] for i in Ping.queue_model.objects.all()]))"


def test_nexus_worker__survives_a_database_restart(pg_cluster, tmp_path):
    """The worker logs, backs off and reconnects; it then drains what came meanwhile, and every message is processed
    once: the run in hand when the server stopped is acknowledged once it is back, none is left Leased."""
    cluster = pg_cluster
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT),
           "DATABASE_URL": cluster.url(),
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
        wait_until(lambda: any(line in worker.log() for line in LOST), "the worker to see the server gone", worker)
        cluster.start()
        python(env, ENQUEUE.format(1000, 1100))
        wait_until(lambda: {int(w[1]) for w in reports(files)} >= set(range(1000, 1100)), "the later pings", worker)
        proc.send_signal(signal.SIGTERM)
        assert worker.finish() == 0, worker.log()
    finally:
        if proc.poll() is None:
            proc.kill()
    processed = Counter(int(words[1]) for words in reports(files))
    assert json.loads(python(env, ROWS)) == [], "a message was left unacknowledged"
    assert max(processed.values()) == 1, "a message was processed twice"
    assert set(processed) == set(range(300)) | set(range(1000, 1100)), "a message was lost"
    assert any(line in worker.log() for line in RECOVERED)
