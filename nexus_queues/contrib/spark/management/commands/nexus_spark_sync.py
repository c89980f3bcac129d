"""``manage.py nexus_spark_sync``: a file of rows (Parquet, CSV, JSON) synced into a queue on Spark."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from pyspark.errors import PySparkException

from nexus_queues.contrib.spark.progress import reporting
from nexus_queues.contrib.spark.source import session
from nexus_queues.contrib.spark.syncing import sync
from nexus_queues.exceptions import NexusQueuesError
from nexus_queues.management.arguments import at_least
from nexus_queues.registry import registry

FORMATS = ("parquet", "csv", "json")


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

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            message_class = registry.get(options["queue"])
        except NexusQueuesError as exc:
            raise CommandError(str(exc)) from exc
        spark = session(options["master"], **dict(options["conf"]))
        reader = spark.read.format(options["format"])
        if options["format"] == "csv":
            reader = reader.option("header", True).option("inferSchema", True)
        extra = {k: options[k] for k in ("rejects", "max_rejects") if options[k] is not None}
        self.stdout.write(f"Syncing {options['input']} into {message_class.queue_name()}...")
        try:
            df = reader.load(options["input"])
            with reporting(spark.sparkContext, self._progress):
                counts = sync(df, message_class, **extra)
        except NexusQueuesError as exc:
            raise CommandError(str(exc)) from exc
        except PySparkException as exc:  # reading the input: a missing file, a bad format
            raise CommandError(f"Nothing was stored: {exc}") from exc
        for name in ("new", "changed", "unchanged", "scheduled", "rejected", "superseded"):
            self.stdout.write(f"{name:>10}: {getattr(counts, name)}")
        if counts.rejected and options["rejects"]:
            self.stdout.write(f"Rejected rows are in {options['rejects']}.")

    def _progress(self, done: int, total: int) -> None:
        self.stdout.write(f"  {done}/{total} tasks done")
