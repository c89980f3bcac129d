"""The orders data set: ``rows`` orders as Parquet, and the same orders with every hundredth one changed.

    .venv/bin/python -m tests.benchmarks.orders.data --rows 200000 --output /tmp/orders

writes ``/tmp/orders/orders.parquet`` and ``/tmp/orders/orders_changed.parquet``. Seeded: the same rows every time.
Names and streets hold accents, CJK and a character outside the BMP, so that the JSON's text is not plain ASCII.
"""

from __future__ import annotations

import argparse
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

CENT = Decimal("0.01")
SCHEMA = pa.schema([
    ("order_id", pa.string()),
    ("customer", pa.string()),
    ("address", pa.struct([("street", pa.string()), ("city", pa.string()), ("postcode", pa.string()),
                           ("country", pa.string())])),
    ("lines", pa.list_(pa.struct([("sku", pa.string()), ("quantity", pa.int32()),
                                  ("price", pa.decimal128(12, 2))]))),
    ("total", pa.decimal128(14, 2)),
    ("placed_at", pa.timestamp("us", tz="UTC")),
    ("tags", pa.list_(pa.string())),
])  # fmt: skip
NAMES = ("Ana Souza", "Zoë Müller", "Łukasz Nowak", "山田 太郎", "Søren\tKierkegaard", 'Chloé "Coco" Martin', "Ravi 🚀")
CITIES = (("Lisboa", "PT"), ("Kraków", "PL"), ("München", "DE"), ("東京", "JP"), ("Aarhus", "DK"), ("Lyon", "FR"))
TAGS = ("gift", "express", "b2b", "repeat", "fragile", "promo")
START = datetime(2026, 1, 1, tzinfo=UTC)


def order(number: int, rng: random.Random, *, changed: bool = False) -> dict[str, object]:
    """Order ``number``; ``changed`` gives it one more tag."""
    city, country = CITIES[rng.randrange(len(CITIES))]
    lines = [
        {"sku": f"SKU-{rng.randrange(100_000):05d}", "quantity": rng.randint(1, 5),
         "price": (Decimal(rng.randrange(100, 100_000)) * CENT)}
        for _ in range(rng.randint(1, 3))
    ]  # fmt: skip
    tags = rng.sample(TAGS, rng.randint(0, 3)) + (["changed"] if changed else [])
    return {
        "order_id": f"ORD-{number:08d}",
        "customer": NAMES[rng.randrange(len(NAMES))],
        "address": {"street": f"{rng.randint(1, 300)} Rua Łąkowa", "city": city,
                    "postcode": f"{rng.randrange(100_000):05d}", "country": country},
        "lines": lines,
        "total": sum((line["price"] * line["quantity"] for line in lines), Decimal(0)),
        "placed_at": START + timedelta(seconds=rng.randrange(30_000_000), microseconds=rng.choice((0, 250_000, 123))),
        "tags": tags,
    }  # fmt: skip


def write(rows: int, output: Path, *, change_every: int = 0, chunk: int = 50_000) -> Path:
    """``rows`` orders into ``output``; with ``change_every``, every such order changed. The file's path."""
    rng = random.Random(40)
    with pq.ParquetWriter(output, SCHEMA) as writer:
        for start in range(0, rows, chunk):
            batch = [order(n, rng, changed=change_every > 0 and n % change_every == 0)
                     for n in range(start, min(rows, start + chunk))]  # fmt: skip
            writer.write_table(pa.Table.from_pylist(batch, SCHEMA))
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--output", type=Path, required=True, help="A folder (made if missing).")
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    print(write(args.rows, args.output / "orders.parquet"))
    print(write(args.rows, args.output / "orders_changed.parquet", change_every=100))


if __name__ == "__main__":
    main()
