"""Queue jobs the worker tests run. They report to the file named by ``NEXUS_TEST_OUT``
and are steered by their messages (a greeting named ``fail`` raises, ``block`` waits for a gate)."""

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from django.utils import timezone

from nexus_queues import PeriodicJob, QueueJob, periodic, previous_message
from nexus_queues.contrib.rabbitmq import RabbitMQPublishJob
from nexus_queues.contrib.rabbitmq.conf import settings as rabbitmq_settings
from nexus_queues.jobs import Outcome
from nexus_queues.models import QueueItem, QueueSettings
from nexus_queues.worker.logs import correlation_id

from .more_queues import Beat, Errand, Ping, Tour
from .queues import BatchReport, Digest, Greeting, Inventory, Product, Shipment

GATE_TIMEOUT = 120
STARTED = os.environ.get("NEXUS_TEST_PING_STARTED")
"""The benchmark's file of each ping's start lateness (set for its worker processes)."""
GREETING_SLEEP = float(os.environ.get("NEXUS_TEST_GREETING_SLEEP", "0"))
"""Seconds each greeting's job takes (set for worker processes that must share a queue's messages)."""
STARTS = os.environ.get("NEXUS_TEST_PING_STARTS")
"""Set for bench_workers.py's worker processes: each ping reports when its job started. Read once, so that the
benchmark's no-op job costs no more than the raw claim loop it is compared with."""


def report(*words: object) -> None:
    """Append one line (words, pid, correlation id) to the test's report file, if any."""
    out = os.environ.get("NEXUS_TEST_OUT")
    if out:
        with open(out, "a") as f:
            f.write(" ".join(str(w) for w in (*words, os.getpid(), correlation_id.get())) + "\n")


def reported(word: str) -> int:
    """How many report lines start with ``word``."""
    out = os.environ.get("NEXUS_TEST_OUT")
    if not out or not Path(out).exists():
        return 0
    return sum(1 for line in Path(out).read_text().splitlines() if line.split(" ", 1)[0] == word)


def wait_for_gate() -> None:
    """Block until the file named by ``NEXUS_TEST_GATE`` exists."""
    gate = Path(os.environ["NEXUS_TEST_GATE"])
    deadline = time.monotonic() + GATE_TIMEOUT
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def _seconds(name: str) -> timedelta | None:
    value = os.environ.get(name)
    return timedelta(seconds=float(value)) if value else None


class GreetingJob(QueueJob):
    """``fail`` raises; ``block`` reports ``started`` and waits for the gate, ``block-db`` then reads the
    database, ``block-check`` then checks for a cancel; ``later`` runs twice, 1 s apart; ``spin`` runs Python
    forever, ``stuck`` blocks in C (opening the FIFO named by ``NEXUS_TEST_FIFO``) until a writer opens it.
    ``NEXUS_TEST_TIME_LIMIT`` (seconds) and ``NEXUS_TEST_ATTEMPTS`` set the time limit and attempts,
    ``NEXUS_TEST_GREETING_SLEEP`` (seconds) the time each greeting takes."""

    message_class = Greeting
    batch_size = 10
    time_limit = _seconds("NEXUS_TEST_TIME_LIMIT")
    max_attempts = int(os.environ.get("NEXUS_TEST_ATTEMPTS", "1"))

    def process(self, message: Greeting) -> datetime | None:
        if message.name in ("block", "block-db", "block-check"):
            report("started", message.times)
            wait_for_gate()
        if message.name == "block-db":
            QueueSettings.objects.count()  # as most jobs do: fails when the connection was lost meanwhile
        if message.name == "block-check":
            self.check_cancelled()
        if message.name in ("spin", "stuck"):
            report("started", message.times)
            self._run_long(message.name)
        if message.name == "fail":
            raise ValueError(f"cannot greet {message.times}")
        time.sleep(GREETING_SLEEP)
        report(message.name, message.times)
        if message.name == "later" and reported("later") == 1:
            return timezone.now() + timedelta(seconds=1)
        return None

    def _run_long(self, name: str) -> None:
        if name == "stuck":
            with open(os.environ["NEXUS_TEST_FIFO"], "rb") as fifo:  # blocks in C until the test opens it
                fifo.read()
            return
        while True:
            time.sleep(0.01)


class ProductJob(QueueJob):
    """Reports each product with the name of its previous processed version."""

    message_class = Product

    def process(self, message: Product) -> None:
        previous = previous_message()
        report("product", message.sku, message.name, previous.name if previous else None)


class PingJob(QueueJob):
    """No-op for positive pings (the benchmark's job); a negative ping fails every time, retried twice.
    ``NEXUS_TEST_BATCH`` sets the batch size, ``NEXUS_TEST_PING_SLEEP`` slows reported pings down,
    ``NEXUS_TEST_PING_GATE`` holds ping 0 (and its batch) until the gate opens, ``NEXUS_TEST_PING_STARTS`` reports
    each ping's start time (bench_workers.py); ``NEXUS_TEST_PING_STARTED`` names a file each ping appends its start's
    lateness to, its ``n`` being its enqueue time in microseconds (bench_worker.py)."""

    message_class = Ping
    batch_size = int(os.environ.get("NEXUS_TEST_BATCH", "100"))
    max_attempts = 3
    backoff = timedelta(milliseconds=200)

    def process(self, message: Ping) -> None:
        if STARTS:
            report("ping-started", message.n, time.time())
        if message.n < 0:
            report("ping-failed", message.n)
            raise RuntimeError(f"ping {message.n} failed")
        if STARTED:
            with open(STARTED, "a") as f:
                f.write(f"{time.time() - message.n / 1e6}\n")
        if os.environ.get("NEXUS_TEST_OUT"):
            if message.n == 0 and os.environ.get("NEXUS_TEST_PING_GATE"):
                wait_for_gate()
            time.sleep(float(os.environ.get("NEXUS_TEST_PING_SLEEP", "0")))
            report("ping", message.n)


class ErrandJob(QueueJob):
    """Reports ``errand-start <n> <time>`` and ``errand-end <n> <time>`` around ``NEXUS_TEST_ERRAND_SLEEP`` seconds."""

    message_class = Errand
    batch_size = 1

    def process(self, message: Errand) -> None:
        report("errand-start", message.n, repr(time.time()))
        time.sleep(float(os.environ.get("NEXUS_TEST_ERRAND_SLEEP", "0")))
        report("errand-end", message.n, repr(time.time()))


class BeatJob(QueueJob):
    """Reports ``beat <n> <lease time>`` per message: the time its claim leased it, which the rate counts."""

    message_class = Beat
    batch_size = 3

    def process_batch(self, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
        for item in items:
            report("beat", item.message.n, repr(item.updated_at.timestamp()))
        return {}


class TourJob(QueueJob):
    """Reports ``tour-start <n> <guide> <time>`` and ``tour-end <n> <guide> <time>`` (``-`` for no guide) around
    ``NEXUS_TEST_TOUR_SLEEP`` seconds."""

    message_class = Tour
    batch_size = 1

    def process(self, message: Tour) -> None:
        guide = message.guide or "-"
        report("tour-start", message.n, guide, repr(time.time()))
        time.sleep(float(os.environ.get("NEXUS_TEST_TOUR_SLEEP", "0")))
        report("tour-end", message.n, guide, repr(time.time()))


class InventoryJob(QueueJob):
    """The batch form: a negative quantity fails that item only."""

    message_class = Inventory
    lease_time = timedelta(seconds=3)

    def process_batch(self, items: Sequence[QueueItem]) -> Mapping[int, Outcome]:
        report("inventory-batch", len(items))
        if any(item.message.sku == "slow" for item in items):
            report("started", "slow")
            wait_for_gate()
        return {item.pk: ValueError("negative stock") for item in items if item.message.quantity < 0}


class UnderTestPrefix:
    """A broker name under the delay prefix, read when used: each test declares its names under its own."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def __get__(self, instance: object, owner: type | None = None) -> str:
        return f"{rabbitmq_settings.DELAY_PREFIX}.{self.suffix}"


class ShipmentJob(RabbitMQPublishJob):
    """The outbox: shipments go to the AMQP queue ``<prefix>.shipping`` after their ``delay_seconds``.
    ``NEXUS_TEST_BATCH`` sets the batch size."""

    message_class = Shipment
    batch_size = int(os.environ.get("NEXUS_TEST_BATCH", "100"))
    destination = UnderTestPrefix("shipping")  # type: ignore[assignment]
    max_attempts = 3
    backoff = timedelta(milliseconds=200)

    def delay_for(self, message: Shipment) -> timedelta:
        return timedelta(seconds=message.delay_seconds)


TICK = os.environ.get("NEXUS_TEST_TICK")
"""Seconds between the scheduled test jobs' ticks, set by the tests that start worker processes."""
RARELY = "0 4 29 2 *"
"""04:00 on 29 February: never within a test run that does not set ``NEXUS_TEST_TICK``."""


def _schedule() -> str | timedelta:
    return timedelta(seconds=float(TICK)) if TICK else RARELY


class DigestJob(QueueJob):
    """Drains the digests on its schedule; reports ``digest <text>`` per message."""

    message_class = Digest
    schedule = _schedule()

    def process(self, message: Digest) -> None:
        report("digest", message.text)


class Heartbeat(PeriodicJob):
    """Reports ``heartbeat``; with the gate file named by ``NEXUS_TEST_GATE`` set, waits for it first."""

    schedule = _schedule()
    category = "Maintenance"

    def run(self) -> None:
        report("heartbeat-started")
        if os.environ.get("NEXUS_TEST_GATE"):
            wait_for_gate()
        if os.environ.get("NEXUS_TEST_HEARTBEAT_FAILS"):
            raise RuntimeError("the heartbeat failed on purpose")
        report("heartbeat")


@periodic("30 2 * * 1" if TICK else RARELY, time_zone="Europe/Stockholm", category="Reports")
def weekly_report() -> None:
    """Reports ``weekly``."""
    report("weekly")


class BatchReportJob(QueueJob):
    """Reports ``batch_done <batch id> <total> <processed> <error> <cancelled>``."""

    message_class = BatchReport

    def process(self, message: BatchReport) -> None:
        counts = message.batch
        assert counts is not None
        report("batch_done", counts.id, counts.total, counts.processed, counts.error, counts.cancelled)
