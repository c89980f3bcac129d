"""A sync whose driver died is shown failed, not running: killing a real driver process."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.urls import reverse

from nexus_queues.backends import backend_for
from nexus_queues.contrib.spark import drivers
from nexus_queues.contrib.spark.models import Sync
from tests.commands import PATIENCE, ROOT, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("java")]  # a real driver runs Spark

SPARK_START = 5 * PATIENCE
"""Seconds a new driver process may take to start Spark and its sync."""

# A driver whose only task waits for the file named by argv[1]: its sync stays running until then.
STALLED_DRIVER = """
import sys
import time
from pyspark.sql import functions as F
from nexus_queues.contrib.spark import session, sync

release = sys.argv[1]
spark = session("local[1]", **{"spark.ui.enabled": "false"})
spark.sparkContext.setLogLevel("ERROR")

@F.udf(returnType="int", useArrow=False)
def stalled(n):
    import pathlib, time
    while not pathlib.Path(release).exists():
        time.sleep(0.05)
    return int(n)

df = spark.range(2, numPartitions=1).select(
    F.concat(F.lit("SKU-"), F.col("id").cast("string")).alias("sku"), stalled("id").alias("quantity"))
sync(df, "inventory")
"""


def running() -> list[Sync]:
    return list(Sync.objects.filter(queue="inventory", state=Sync.State.RUNNING))


def test_sync__killed_driver_is_shown_failed(child_env: dict[str, str], tmp_path: Path) -> None:
    """While its driver lives a sync stays running; once the driver process is killed, it is shown failed."""
    release, log = tmp_path / "release", tmp_path / "driver.log"
    code = "import django; django.setup()\n" + STALLED_DRIVER
    with log.open("wb") as err:
        driver = subprocess.Popen([sys.executable, "-c", code, str(release)], env=child_env, cwd=ROOT, stderr=err)
    try:
        started = time.monotonic()  # a new Spark driver takes over a minute to start on a loaded machine
        while not running() and driver.poll() is None and time.monotonic() - started < SPARK_START:
            time.sleep(0.1)
        assert running() and driver.poll() is None, log.read_text()[-3000:]
        assert drivers.settle(DEFAULT_DB_ALIAS) == 0
        assert len(running()) == 1

        driver.send_signal(signal.SIGKILL)
        driver.wait(PATIENCE)
        wait_until(lambda: drivers.settle(DEFAULT_DB_ALIAS), "the killed driver's lock to be released")
    finally:
        release.touch()  # lets any of the driver's Spark workers that outlive it finish
        if driver.poll() is None:
            driver.kill()
            driver.wait()

    (record,) = Sync.objects.filter(queue="inventory")
    assert (record.state, record.error) == (Sync.State.FAILED, drivers.STOPPED)
    assert record.finished_at is not None


def test_sync_admin__shows_a_sync_without_its_driver_failed(admin_client: Any) -> None:
    """The admin's list shows failed a running sync whose driver holds no lock, and running one whose driver does."""
    orphan = Sync.objects.create(queue="products", watched=True)
    with drivers.watched(DEFAULT_DB_ALIAS, "products") as alive:
        page = admin_client.get(reverse("admin:nexus_spark_sync_changelist"))

        assert page.status_code == 200
        orphan.refresh_from_db()
        alive.refresh_from_db()
        assert (orphan.state, alive.state) == (Sync.State.FAILED, Sync.State.RUNNING)
        assert backend_for(DEFAULT_DB_ALIAS).held([drivers.lock_name(alive.pk)])
    assert not backend_for(DEFAULT_DB_ALIAS).held([drivers.lock_name(alive.pk)])
