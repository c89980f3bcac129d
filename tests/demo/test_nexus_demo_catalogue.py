"""``manage.py nexus_demo_catalogue``: the Parquet file it writes and the arguments it refuses."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from demo_project.shop.management.commands import nexus_demo_catalogue
from tests.demo.conftest import TODAY

MIDNIGHT = datetime.combine(TODAY, time(), UTC)


def test_nexus_demo_catalogue__writes_the_file_the_sync_reads(write_catalogue):
    """The file has sku, name, prices (currency, amount, valid_from, valid_to) and process_at, one row per product."""
    path, out = write_catalogue("--products", "1000")
    stamp = pa.timestamp("us", tz="UTC")
    price = pa.struct(
        [("currency", pa.string()), ("amount", pa.decimal128(12, 2)), ("valid_from", stamp), ("valid_to", stamp)]
    )
    expected = pa.schema(
        [("sku", pa.string()), ("name", pa.string()), ("prices", pa.list_(price)), ("process_at", stamp)]
    )
    table = pq.read_table(path)
    assert table.schema.remove_metadata().equals(expected, check_metadata=False)
    assert table.num_rows == 1000
    assert len(set(table.column("sku").to_pylist())) == 1000
    scheduled = len(table.column("process_at").drop_null())
    assert out == f"Wrote 1000 products to {path} (seed 1, prices as of {TODAY}): 0 changed, {scheduled} scheduled.\n"


def test_nexus_demo_catalogue__same_arguments_same_rows(write_catalogue):
    """Two runs with the same arguments write the same rows; another seed writes other ones."""
    first, _ = write_catalogue("--products", "500", name="first.parquet")
    second, _ = write_catalogue("--products", "500", name="second.parquet")
    other, _ = write_catalogue("--products", "500", "--seed", "2", name="other.parquet")
    assert pq.read_table(first).to_pylist() == pq.read_table(second).to_pylist()
    assert pq.read_table(first).column("prices") != pq.read_table(other).column("prices")


def test_nexus_demo_catalogue__a_product_is_the_same_in_a_bigger_catalogue(write_catalogue):
    """The first products of a catalogue of 1,000 are those of a catalogue of 100."""
    small, _ = write_catalogue("--products", "100", name="small.parquet")
    big, _ = write_catalogue("--products", "1000", name="big.parquet")
    assert pq.read_table(big).slice(0, 100).to_pylist() == pq.read_table(small).to_pylist()


def test_nexus_demo_catalogue__rows_are_product_updated_messages(write_catalogue, messages_json):
    """Every row but process_at validates as the demo's ProductUpdated, one message per sku."""
    path, _ = write_catalogue("--products", "1000")
    assert len(messages_json(path)) == 1000


def test_nexus_demo_catalogue__change_one_percent(write_catalogue, messages_json):
    """--change 1 of 1,000 products changes exactly 10 products' message JSON, and nothing else."""
    before, _ = write_catalogue("--products", "1000", name="before.parquet")
    after, out = write_catalogue("--products", "1000", "--change", "1", name="after.parquet")
    old, new = messages_json(before), messages_json(after)
    assert old.keys() == new.keys()
    assert len([sku for sku in old if old[sku] != new[sku]]) == 10
    assert pq.read_table(before).column("process_at") == pq.read_table(after).column("process_at")
    assert " 10 changed," in out


def test_nexus_demo_catalogue__process_at_is_the_first_future_price_start(write_catalogue):
    """process_at is the earliest price start after the reference day, null when no price starts then."""
    path, out = write_catalogue("--products", "2000")
    rows = pq.read_table(path).to_pylist()
    starts = [[p["valid_from"] for p in row["prices"] if p["valid_from"] is not None] for row in rows]
    assert not [s for each in starts for s in each if MIDNIGHT <= s < MIDNIGHT + timedelta(days=1)]
    later = [min((s for s in each if s > MIDNIGHT), default=None) for each in starts]
    assert [row["process_at"] for row in rows] == later
    scheduled = sum(start is not None for start in later)
    assert 100 < scheduled < 300
    assert out.endswith(f" {scheduled} scheduled.\n")


def test_nexus_demo_catalogue__prices_follow_one_another(write_catalogue):
    """A product's prices are in order, each ending where the next starts; only the first is open at the start."""
    path, _ = write_catalogue("--products", "1000")
    for row in pq.read_table(path).to_pylist():
        prices = row["prices"]
        assert prices[0]["valid_from"] is None and prices[-1]["valid_to"] is None
        assert [p["valid_to"] for p in prices[:-1]] == [p["valid_from"] for p in prices[1:]]
        assert all(Decimal("1.00") <= p["amount"] < Decimal("1100") for p in prices)
    assert {len(row["prices"]) for row in pq.read_table(path).to_pylist()} == {1, 2, 3}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--products", "-1"], "argument --products: -1 is less than 0"),
        (["--products", "many"], "argument --products: 'many' is not an integer"),
        (["--change", "101"], "argument --change: 101 is not a percentage from 0 to 100"),
        (["--change", "-0.5"], "argument --change: -0.5 is not a percentage from 0 to 100"),
        (["--change", "nan"], "argument --change: nan is not a percentage from 0 to 100"),
        (["--today", "2026-13-01"], "argument --today: '2026-13-01' is not a date (YYYY-MM-DD)"),
    ],
)
def test_nexus_demo_catalogue__refuses_bad_arguments(write_catalogue, tmp_path, args, error):
    """Bad arguments stop the command with an error naming the argument, before any file is written."""
    with pytest.raises(CommandError, match=re.escape(error)):
        write_catalogue(*args)
    assert not list(tmp_path.iterdir())


def test_nexus_demo_catalogue__refuses_a_path_it_cannot_write(tmp_path):
    """A directory, a file in a missing directory, or a path the system refuses is a CommandError; nothing is left."""
    dangling = tmp_path / "link.parquet"
    dangling.symlink_to(tmp_path / "missing" / "catalogue.parquet")
    cases = {
        str(tmp_path): "is a directory; name a file in it",
        str(tmp_path / "missing" / "catalogue.parquet"): "is not a directory",
        str(dangling): f"Cannot write {dangling}",
    }
    for output, error in cases.items():
        with pytest.raises(CommandError, match=error):
            call_command(nexus_demo_catalogue.Command(), "--products", "1", "--output", output)
    assert not (tmp_path / "missing").exists()
