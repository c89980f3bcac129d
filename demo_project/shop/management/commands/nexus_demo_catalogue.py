"""``manage.py nexus_demo_catalogue``: write the demo's product catalogue as a Parquet file."""

from __future__ import annotations

import argparse
import math
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from django.core.management.base import BaseCommand, CommandError

from demo_project.shop.catalogue import build_catalogue
from nexus_queues.management.arguments import at_least


def percent(text: str) -> float:
    """An argparse type: a percentage from 0 to 100."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and 0 <= value <= 100):
        raise argparse.ArgumentTypeError(f"{text} is not a percentage from 0 to 100")
    return value


def output_file(text: str) -> Path:
    """An argparse type: a file path in an existing directory, not a directory itself."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory; name a file in it")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path.parent} is not a directory")
    return path


def day(text: str) -> date:
    """An argparse type: a date as YYYY-MM-DD."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from None


class Command(BaseCommand):
    help = (
        "Write the demo catalogue as Parquet: products with prices valid from and to a time, ready for "
        "nexus_spark_sync --queue product_updates. The same arguments on the same day write the same rows."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--products", type=at_least(0), default=100_000, help="How many (default 100000).")
        parser.add_argument("--output", type=output_file, required=True, help="The Parquet file to write.")
        parser.add_argument("--change", type=percent, default=0.0, metavar="PERCENT",
                            help="Change this percentage of the products: a new name or price (default 0).")
        parser.add_argument("--seed", type=int, default=1, help="Picks the names, prices and dates (default 1).")
        parser.add_argument("--today", type=day, metavar="YYYY-MM-DD",
                            help="The day price dates count from (default: today, UTC); keep it to rewrite a file.")

    def handle(self, *args: Any, **options: Any) -> None:
        today = options["today"] or datetime.now(UTC).date()
        catalogue = build_catalogue(options["products"], seed=options["seed"], today=today, change=options["change"])
        try:
            pq.write_table(catalogue.table, options["output"])
        except OSError as exc:
            raise CommandError(f"Cannot write {options['output']}: {exc}") from exc
        self.stdout.write(
            f"Wrote {catalogue.table.num_rows} products to {options['output']} (seed {options['seed']}, "
            f"prices as of {today}): {catalogue.changed} changed, {catalogue.scheduled} scheduled."
        )
