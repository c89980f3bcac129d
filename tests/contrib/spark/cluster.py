"""A standalone Spark cluster on 127.0.0.1 for a test: a master and a worker started by pyspark's ``spark-class``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark
import pytest

SPARK_HOME = Path(pyspark.__file__).resolve().parent
"""pyspark's package is a Spark distribution: ``bin/spark-class`` and ``jars/``."""
HOST = "127.0.0.1"
STARTUP = 180.0
"""Seconds the daemons get to start and register (two JVMs on two busy cores)."""
STOPPING = 30.0
"""Seconds a stopped daemon, and everything it started, gets to be gone."""
DRIVERS_OWN = ("DJANGO_SETTINGS_MODULE", "NEXUS_TEST_DB_NAME", "DATABASE_URL", "PYTHONPATH", "PYSPARK_PYTHON")
"""What the daemons must not inherit: the executors learn Django's setup and their Python from the driver."""


def daemon_env() -> dict[str, str]:
    """Environment of the master and worker: Spark bound to 127.0.0.1, none of the driver's setup."""
    env = {key: value for key, value in os.environ.items() if key not in DRIVERS_OWN}
    return {
        **env,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": HOST,
        # The master's REST submission server would take port 6066, which another run may hold.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


@dataclass
class Daemon:
    """A Spark daemon started by the test in its own process group (``spark-class`` execs java)."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(cls, name: str, args: list[str], folder: Path) -> Daemon:
        """Start ``spark-class ARGS``, its output in ``folder/NAME.log``."""
        log = folder / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                env=daemon_env(),
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return cls(name, proc, log)

    def stop(self) -> None:
        """Send its process group TERM, then KILL when any of it lingers."""
        self.signal(signal.SIGTERM)
        if not _within(STOPPING, lambda: self.proc.poll() is not None and self.gone()):
            self.signal(signal.SIGKILL)
            self.proc.wait(timeout=STOPPING)

    def signal(self, number: int) -> None:
        """Send ``number`` to every process of its group (the executors and their Pythons included)."""
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, number)

    def port(self, service: str) -> int | None:
        """The port Spark's ``service`` bound, once its log says so."""
        log = self.log.read_text(errors="replace")
        found = re.search(rf"Successfully started service '{service}' on port (\d+)", log)
        return int(found.group(1)) if found else None

    def gone(self) -> bool:
        """Whether no process of its group is left."""
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return True
        return False


@dataclass
class Cluster:
    """A running master and worker; the worker keeps each application's executor logs under ``work_dir``."""

    url: str
    webui: str
    work_dir: Path
    daemons: list[Daemon] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        """The master's view: workers, running and completed applications (its web UI's JSON)."""
        with urllib.request.urlopen(f"{self.webui}/json/", timeout=10) as response:
            return dict(json.load(response))

    def completed_apps(self) -> list[dict[str, Any]]:
        """The applications that ran on the cluster and finished."""
        return list(self.state()["completedapps"])

    def executor_logs(self) -> list[Path]:
        """The stderr of each executor the worker ran (``work_dir/app-*/<executor>/stderr``)."""
        return sorted(self.work_dir.glob("app-*/*/stderr"))

    def logs(self) -> str:
        """The daemons' and executors' logs, for a failure's message."""
        files = [daemon.log for daemon in self.daemons] + self.executor_logs()
        return "\n".join(f"----- {path}\n{path.read_text(errors='replace')[-6000:]}" for path in files if path.exists())

    def wait_for(self, condition: Callable[[], object], what: str, timeout: float = STARTUP) -> None:
        """Poll ``condition`` until true; fail with the logs after ``timeout`` or when a daemon died."""

        def met() -> object:
            for daemon in self.daemons:
                if daemon.proc.poll() is not None:
                    pytest.fail(f"The Spark {daemon.name} exited ({daemon.proc.returncode}).\n{self.logs()}")
            return condition()

        _wait(met, what, timeout, self.logs)

    def worker_alive(self) -> bool:
        """Whether a worker has registered with the master and is alive."""
        try:
            return any(worker["state"] == "ALIVE" for worker in self.state()["workers"])
        except (OSError, ValueError):  # the web UI is not up yet, or answers with its HTML page before its JSON
            return False


@contextmanager
def standalone_cluster(folder: Path) -> Iterator[Cluster]:
    """A master and one worker (1 core, 1g) on 127.0.0.1, registered before the body and stopped after it.

    Every port is 0, the system's choice, read back from the daemon's log: a port chosen beforehand may be taken
    by another run before Spark binds it, and Spark would then move to the next one while the worker calls the first.
    """
    daemons: list[Daemon] = []
    try:
        master = ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", "0", "--webui-port", "0"]
        daemons.append(started := Daemon.start("master", master, folder))
        _wait(lambda: started.port("sparkMaster") and started.port("MasterUI"), "the Spark master's ports", STARTUP,
              lambda: started.log.read_text(errors="replace"))
        cluster = Cluster(f"spark://{HOST}:{started.port('sparkMaster')}", f"http://{HOST}:{started.port('MasterUI')}",
                          folder / "work", daemons)
        cluster.work_dir.mkdir()
        worker = [
            "org.apache.spark.deploy.worker.Worker", cluster.url, "--host", HOST, "--port", "0", "--webui-port", "0",
            "--cores", "1", "--memory", "1g", "--work-dir", str(cluster.work_dir),
        ]  # fmt: skip
        daemons.append(Daemon.start("worker", worker, folder))
        cluster.wait_for(cluster.worker_alive, f"a worker registered with the master at {cluster.url}")
        yield cluster
    finally:
        for daemon in reversed(daemons):
            daemon.stop()
        for daemon in daemons:
            _wait(daemon.gone, f"the processes of the Spark {daemon.name} to be gone", STOPPING, lambda: "")


def _within(timeout: float, condition: Callable[[], object]) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _wait(condition: Callable[[], object], what: str, timeout: float, logs: Callable[[], str]) -> None:
    if not _within(timeout, condition):
        pytest.fail(f"Gave up after {timeout:.0f} s waiting for {what}.\n{logs()}")
