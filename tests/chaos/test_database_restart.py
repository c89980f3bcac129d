"""PostgreSQL restarted under workers draining a queue (a cluster of the test's own, restarted fast and immediate): a
restart shorter than the lease loses no acknowledgement, leaves nothing Leased or Abandoned, and runs nothing twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from tests.commands import PATIENCE, ROOT, Commands, reports, wait_until

pytestmark = pytest.mark.engines("postgresql")

PINGS = 2000
RESTARTS = ("fast", "immediate", "fast", "immediate")

ENQUEUE = f"""from nexus_queues import enqueue_many; from tests.testapp.more_queues import Ping
enqueue_many([Ping(n=n) for n in range({PINGS})])"""
LEFT = """import json; from collections import Counter; from tests.testapp.more_queues import Ping
print(json.dumps(Counter(Ping.queue_model.objects.values_list("status", flat=True))))"""


def django(env: dict[str, str], code: str) -> str:
    """Run Django code on the cluster's database; its stdout."""
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_workers__ride_out_restarts_shorter_than_the_lease(pg_cluster, tmp_path):
    """Three burst workers (one of two threads) drain 2,000 pings in runs of 20 while the server restarts four times
    with runs in hand: each ping is processed exactly once and no row is left Leased or Abandoned."""
    files = {"out": tmp_path / "out"}
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT),
           "DATABASE_URL": pg_cluster.url(), "NEXUS_TEST_OUT": str(files["out"]), "NEXUS_TEST_BATCH": "20",
           "NEXUS_TEST_PING_SLEEP": "0.005"}
    env.pop("NEXUS_TEST_DB_NAME", None)
    subprocess.run([sys.executable, "-m", "django", "migrate", "-v0"], env=env, cwd=ROOT, check=True, timeout=PATIENCE)
    django(env, ENQUEUE)
    commands = Commands(env, tmp_path)
    try:
        workers = [commands.start("nexus_worker", "--burst", "--queue", "pings", *more)
                   for more in ((), (), ("--concurrency", "2"))]
        for number, mode in enumerate(RESTARTS, 1):
            progress = number * PINGS // (len(RESTARTS) + 2)
            wait_until(lambda at=progress: len(reports(files)) >= at, f"{progress} pings before restart {number}")
            pg_cluster.stop(mode)
            pg_cluster.start()
        for worker in workers:
            assert worker.finish() == 0, worker.log()
    finally:
        commands.kill_the_rest()
    assert any("Lost the connection" in worker.log() for worker in workers), "no restart met a run in hand"
    processed = Counter(int(words[1]) for words in reports(files))
    assert [n for n, times in processed.items() if times > 1] == [], "processed twice"
    assert set(processed) == set(range(PINGS)), "never processed"
    assert json.loads(django(env, LEFT)) == {}, "rows left unacknowledged"
