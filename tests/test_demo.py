"""The README's demo command works from nothing."""

import os
import subprocess
import sys

import pytest

from tests.commands import ROOT


@pytest.mark.slow
def test_nexus_demo__runs_on_a_fresh_database(tmp_path):
    """manage.py nexus_demo migrates a new SQLite file, enqueues, processes and reports per status."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "nexus_demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "3 discarded as idempotent duplicates" in lines[1]
    assert lines[2].endswith("4 processed, 1 failed.")
    assert "Batch 1 (catalogue sync) completed: 3 processed, 0 failed of 3" in lines[4]
    assert lines[5].startswith("Leased 1 message(s) of export_prices")
    assert lines[-2:] == ["send_order_confirmation: Error: 1, Sleeping: 1", "product_updates: Pending: 1, Processed: 2"]
