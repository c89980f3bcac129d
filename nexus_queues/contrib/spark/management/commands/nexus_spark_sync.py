"""``manage.py nexus_spark_sync``: a file of rows (Parquet, CSV, JSON) synced into a queue on Spark."""

from __future__ import annotations

import argparse
import glob
import json
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from pyspark.errors import PySparkException

from nexus_queues.contrib.spark.progress import Progress, reporting, rows_staged
from nexus_queues.contrib.spark.ready import check_migrated
from nexus_queues.contrib.spark.source import session
from nexus_queues.contrib.spark.spreading import spread
from nexus_queues.contrib.spark.syncing import sync
from nexus_queues.exceptions import InvalidArgument, NexusQueuesError
from nexus_queues.management.arguments import at_least
from nexus_queues.messages import QueueMessage
from nexus_queues.registry import registry

FORMATS = ("parquet", "csv", "json")
QUIET_LOGGING = Path(__file__).resolve().parents[2] / "log4j2-quiet.properties"
"""Spark's JVM logging errors only, unless the command runs with -v 2 or more."""


def setting(text: str) -> tuple[str, str]:
    """A Spark setting written KEY=VALUE, for argparse."""
    key, equals, value = text.partition("=")
    if not key.strip() or not equals:
        raise argparse.ArgumentTypeError(f"must read KEY=VALUE, as spark.executor.memory=4g; got {text!r}")
    return key.strip(), value


class Command(BaseCommand):
    help = "Sync a file of rows into a queue on Spark, all or nothing, and print what it did."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--queue", required=True, help="The queue to sync into.")
        parser.add_argument("--input", required=True, help="The file or folder of rows (Spark reads it).")
        parser.add_argument("--format", choices=FORMATS, default="parquet", help="The input's format.")
        parser.add_argument("--master", help="Spark's master URL (default: local Spark, or spark-submit's).")
        parser.add_argument(
            "--conf",
            type=setting,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="A Spark setting, as spark-submit's --conf (spark.executor.memory=4g); repeat for more.",
        )
        parser.add_argument("--rejects", help="Where rejected rows go: Parquet, or JSON lines for .json/.jsonl.")
        parser.add_argument(
            "--max-rejects",
            type=at_least(0),
            help="Fail, storing nothing, beyond this many rejects (0 without --rejects).",
        )
        parser.add_argument(
            "--on-complete",
            metavar="QUEUE",
            help="The queue of a message enqueued once the messages the sync makes Pending have all finished.",
        )
        parser.add_argument(
            "--on-complete-message",
            metavar="JSON",
            help='That message\'s fields, a JSON object (default {}): \'{"currency": "EUR"}\'.',
        )
        parser.add_argument("--batch-label", help="The label of the sync's batch (default: Spark sync #<id>).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            message_class = registry.get(options["queue"])
            check_migrated(message_class)
            on_complete = _completion(options["on_complete"], options["on_complete_message"])
        except NexusQueuesError as exc:
            raise CommandError(str(exc)) from exc
        check_input(options["input"])
        spark = session(options["master"], **spark_conf(options["conf"], options["verbosity"]))
        if options["verbosity"] < 2:
            spark.sparkContext.setLogLevel("ERROR")
        reader = spark.read.format(options["format"])
        if options["format"] == "csv":
            reader = reader.option("header", True).option("inferSchema", True)
        names = ("rejects", "max_rejects", "batch_label")
        extra = {k: options[k] for k in names if options[k] is not None}
        if on_complete is not None:
            extra["on_complete"] = on_complete
        try:
            df = reader.load(options["input"])
            cores, read_in = spark.sparkContext.defaultParallelism, df.rdd.getNumPartitions()
            queue, partitions = message_class.queue_name(), _partitions(read_in, cores)
            self.stdout.write(f"Syncing {options['input']} ({partitions}) into {queue}...")
            with reporting(spark.sparkContext, self._progress, self._staged(message_class)):
                counts = sync(spread(df, cores), message_class, **extra)
        except NexusQueuesError as exc:
            raise CommandError(str(exc)) from exc
        except PySparkException as exc:  # reading the input: a missing file, a bad format
            raise CommandError(f"Nothing was stored: {_first_line(exc)}") from exc
        for name in ("new", "changed", "unchanged", "scheduled", "rejected", "superseded"):
            self.stdout.write(f"{name:>10}: {getattr(counts, name)}")
        if counts.batch is not None:
            then = f" (once processed: {options['on_complete']})" if options["on_complete"] else ""
            self.stdout.write(f"{'batch':>10}: {counts.batch}{then}")
        if counts.rejected and options["rejects"]:
            self.stdout.write(f"Rejected rows are in {options['rejects']}.")

    def _progress(self, progress: Progress) -> None:
        self.stdout.write(f"  {progress.done}/{progress.tasks} tasks done, {progress.staged:,} rows staged")

    def _staged(self, message_class: type[QueueMessage]) -> partial[int]:
        since = timezone.now().replace(microsecond=0)
        return partial(rows_staged, message_class.queue_options.database, message_class.queue_name(), since)


def spark_conf(given: list[tuple[str, str]], verbosity: int) -> dict[str, str]:
    """The Spark settings given, with the command's defaults: no console progress bar (the command prints its
    own), and the JVM logging errors only below verbosity 2."""
    conf = {"spark.ui.showConsoleProgress": "false", **dict(given)}
    if verbosity < 2:
        conf.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={QUIET_LOGGING.as_uri()}")
    return conf


def check_input(path: str) -> None:
    """Raise a one-line CommandError when ``path`` is on this machine's disks and nothing is there."""
    scheme = urlparse(path).scheme
    if scheme not in ("", "file"):
        return  # another file system (s3a://, hdfs://...): Spark says what it finds
    local = urlparse(path).path if scheme == "file" else path
    if not glob.glob(local):
        raise CommandError(f"No input at {path}: nothing was stored.")


def _partitions(read_in: int, cores: int) -> str:
    if read_in >= cores:
        return f"{read_in} partitions"
    return f"{read_in} partition{'s' if read_in > 1 else ''}, spread over {cores} in its order"


def _first_line(exc: Exception) -> str:
    """The first line of an error from the JVM, without its Java stack."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _completion(queue: str | None, fields: str | None) -> QueueMessage | None:
    """The completion message ``--on-complete`` and ``--on-complete-message`` give, checked before Spark starts."""
    if queue is None:
        if fields is not None:
            raise InvalidArgument("--on-complete-message needs --on-complete, the queue of the completion message.")
        return None
    completion_class = registry.get(queue)
    try:
        return completion_class.model_validate(json.loads(fields or "{}"))
    except ValueError as exc:  # bad JSON, or fields the class refuses (pydantic's ValidationError)
        raise InvalidArgument(f"--on-complete-message is not a message of queue {queue!r}: {exc}") from exc
